from typing import cast

from django.db import IntegrityError, transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import api_view
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from profiler_app.core.models import TrainingJob
from profiler_app.core.query import query_params
from profiler_app.dashboard import headline, queries
from profiler_app.dashboard.models import CustomHistogram
from profiler_app.dashboard.serializers import (
    AnnotationDurationsSerializer,
    AnnotationQuerySerializer,
    CustomHistogramSerializer,
    DashboardSerializer,
    HeadlineSerializer,
)
from profiler_app.profiles import answers


@extend_schema(responses=DashboardSerializer)
@api_view(["GET"])
def dashboard_view(request, job_id: int):
    job = get_object_or_404(TrainingJob, pk=job_id)
    window = job.window_for(request.user)
    key = answers.answer_key(job, window, "dashboard")
    return answers.response(key, lambda: queries.dashboard(job, window))


@extend_schema(responses=HeadlineSerializer)
@api_view(["GET"])
def headline_view(request, job_id: int):
    """The Dashboard's headline (its breakdown stored by the ingest per part and window)."""
    job = get_object_or_404(TrainingJob, pk=job_id)
    window = job.window_for(request.user)
    key = answers.answer_key(job, window, "headline")
    return answers.response(key, lambda: headline.headline(job, window))


@extend_schema(parameters=[AnnotationQuerySerializer], responses=AnnotationDurationsSerializer)
@api_view(["GET"])
def annotation_durations_view(request, job_id: int):
    job = get_object_or_404(TrainingJob, pk=job_id)
    name = query_params(AnnotationQuerySerializer, request)["name"]
    durations = queries.annotation_durations(job, job.window_for(request.user), name)
    return Response({"name": name, "durations_ns": durations})


class CustomHistogramViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """A user's own custom histograms; teammates keep theirs."""

    serializer_class = CustomHistogramSerializer
    filterset_fields = ["job"]
    pagination_class = None

    def get_queryset(self):
        # Authenticated by the default permission, so the user has a primary key.
        return CustomHistogram.objects.filter(user_id=cast(int, self.request.user.pk))

    def perform_create(self, serializer):
        try:
            with transaction.atomic():
                serializer.save(user=self.request.user)
        except IntegrityError:
            raise ValidationError(
                {"annotation_name": "This histogram is already on your dashboard."}
            ) from None
