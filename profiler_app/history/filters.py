"""The series list's filters (query parameters validated as a form)."""

import django_filters

from profiler_app.history.models import Series


class SeriesFilter(django_filters.FilterSet):
    # A series' name is its key (the collector's PROFILER_SERIES, upload --series). A sequential
    # scan serves the History page's picker: a team has hundreds of series, not millions.
    search = django_filters.CharFilter(
        field_name="name",
        lookup_expr="icontains",
        label="Series whose name contains this text, in any case",
    )

    class Meta:
        model = Series
        fields = ["search"]
