"""The job list's filters (query parameters validated as a form)."""

import datetime as dt

import django_filters
from django import forms
from django.core.exceptions import ValidationError as DjangoValidationError
from django_filters.fields import IsoDateTimeField

from profiler_app.core.models import (
    JobState,
    TrainingJob,
)
from profiler_app.core.serializers import (
    tag_problem,
)


class UtcIsoDateTimeField(IsoDateTimeField):
    """An ISO 8601 time, converted to UTC. Postgres refuses offsets beyond ±15:59, and a time
    such as ``9999-12-31T23:59-23:59`` is past the year 9999 in UTC (an OverflowError): both
    are a 400, not a 500."""

    def to_python(self, value):
        try:
            moment = super().to_python(value)
            return None if moment is None else moment.astimezone(dt.UTC)
        except OverflowError as exc:
            raise DjangoValidationError(
                "Enter a date/time between the years 1 and 9999 in UTC.", code="invalid"
            ) from exc


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


class TagsField(forms.MultipleChoiceField):
    """Any number of tags (``?tag=a&tag=b``), each of them a well-formed tag."""

    default_error_messages = {
        "invalid_choice": "“%(value)s” is not a tag: use letters, digits and - _ . : only.",
    }

    def valid_value(self, value):
        return tag_problem(value) is None


class TagsFilter(django_filters.MultipleChoiceFilter):
    field_class = TagsField


class JobFilter(django_filters.FilterSet):
    search = django_filters.CharFilter(field_name="name", lookup_expr="icontains")
    name = django_filters.CharFilter(field_name="name", lookup_expr="exact")
    status = django_filters.MultipleChoiceFilter(
        choices=JobState.choices,
        method="filter_state",
        label="Jobs in any of these states (as the list shows them); failed includes partly failed",
    )
    created_after = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="lte")
    mine = django_filters.BooleanFilter(method="filter_mine", label="Only my jobs (I own them)")
    tag = TagsFilter(method="filter_tags", label="Jobs that have all of these tags")

    class Meta:
        model = TrainingJob
        fields = ["search", "name", "status", "created_after", "created_before", "mine", "tag"]

    def filter_state(self, queryset, name, value: list[str]):
        states = set(value)
        if JobState.FAILED in states:
            states.add(JobState.PARTIAL)
        return queryset.filter(state__in=sorted(states)) if states else queryset

    def filter_mine(self, queryset, name, value):
        return queryset.filter(owner_id=self.request.user.pk) if value else queryset

    def filter_tags(self, queryset, name, value: list[str]):
        # tags @> ARRAY[...]: the GIN index on tags serves it.
        return queryset.filter(tags__contains=list(value)) if value else queryset
