"""Run history API: series and their settings, a job's series, its verdict, a check for CI."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action, api_view
from rest_framework.exceptions import APIException, PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from profiler_app.core.models import TrainingJob
from profiler_app.core.permissions import require_can_change
from profiler_app.history import logic, queries
from profiler_app.history.filters import SeriesFilter
from profiler_app.history.serializers import (
    CheckSerializer,
    DeliverySerializer,
    JobSeriesSerializer,
    SeriesRunSerializer,
    SeriesSerializer,
    VerdictSerializer,
)

NOT_SERIES_OWNER = "Only the series' owner or a staff member can change its settings."


class NotParsed(APIException):
    status_code = 409
    default_code = "not_parsed"
    default_detail = "The run's parts are still being parsed."


class SeriesViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """Series of runs; their owner (or staff) sets the baseline, thresholds and webhook."""

    serializer_class = SeriesSerializer
    permission_classes = [IsAuthenticated]
    filterset_class = SeriesFilter
    ordering_fields = ["name", "created_at", "run_count"]
    ordering = ["name"]
    http_method_names = ["get", "patch", "head", "options"]

    def get_queryset(self):
        return logic.series_with_counts()

    def perform_update(self, serializer):
        if not serializer.instance.can_change(self.request.user):
            raise PermissionDenied(NOT_SERIES_OWNER, code="not_owner")
        series = serializer.save()
        logic.rejudge_series(series)

    @extend_schema(responses=SeriesRunSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def runs(self, request, pk=None):
        """The series' runs in time order with their figures and verdicts."""
        rows = queries.runs_document(self.get_object())
        return Response(SeriesRunSerializer(rows, many=True).data)

    @extend_schema(responses=DeliverySerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def deliveries(self, request, pk=None):
        """The webhook's recorded deliveries, newest first."""
        series = self.get_object()
        deliveries = series.deliveries.select_related("job")[:100]
        return Response(DeliverySerializer(deliveries, many=True).data)


@extend_schema(methods=["GET"], responses=JobSeriesSerializer)
@extend_schema(methods=["PUT"], request=JobSeriesSerializer, responses=JobSeriesSerializer)
@api_view(["GET", "PUT"])
def job_series_view(request, job_id: int):
    """The job's series; PUT moves it to another (created if new): its owner or staff only."""
    job = get_object_or_404(TrainingJob, pk=job_id)
    if request.method == "PUT":
        require_can_change(request.user, job)
        body = JobSeriesSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        run = logic.assign(job, body.validated_data["series"])
        if logic.parts_ready(job):
            logic.send_judge(job.pk)
    else:
        run = logic.membership(job)
    return Response({"series": run.series.name, "series_id": run.series_id, "chosen": run.chosen})


@extend_schema(responses=VerdictSerializer)
@api_view(["GET"])
def verdict_view(request, job_id: int):
    """The run's stored verdict against its baseline (status "pending" until judged)."""
    job = get_object_or_404(TrainingJob, pk=job_id)
    return Response(queries.stored_verdict(job))


@extend_schema(request=CheckSerializer, responses={200: VerdictSerializer, 409: None})
@api_view(["POST"])
def check_view(request, job_id: int):
    """Judges the run now, against ``baseline`` (default: its series' baseline) with
    ``threshold_pct`` (default: the series' threshold); nothing is stored. 409 while a run's
    parts are being parsed."""
    job = get_object_or_404(TrainingJob, pk=job_id)
    body = CheckSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    data = body.validated_data
    try:
        found = queries.checked_verdict(
            job, data.get("baseline"), data.get("threshold_pct"), "baseline" not in data
        )
    except logic.NotReady as exc:
        raise NotParsed(str(exc)) from None
    return Response(found)
