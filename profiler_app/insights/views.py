"""Insights API: rule results, rule parameters, the report download and the analyses."""

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view, content_negotiation_class
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.fields import ListField
from rest_framework.response import Response

from profiler_app.core.errors import AnswerTooLarge, size_text
from profiler_app.core.models import TrainingJob
from profiler_app.core.negotiation import JsonErrors
from profiler_app.core.permissions import require_can_change
from profiler_app.insights import logic, queries
from profiler_app.insights.serializers import (
    AnalysesSerializer,
    InsightsSerializer,
    ParametersSerializer,
)


@extend_schema(responses=InsightsSerializer)
@api_view(["GET"])
def insights_view(request, job_id: int):
    job = get_object_or_404(TrainingJob, pk=job_id)
    window = job.window_for(request.user)
    logic.request_if_missing(job, window)
    return Response(queries.insights_document(job, window))


@extend_schema(
    methods=["GET"],
    responses=ParametersSerializer,
    description="The rules' parameters with their defaults and this job's overrides.",
)
@extend_schema(
    methods=["PUT"],
    request=OpenApiTypes.OBJECT,
    responses=ParametersSerializer,
    description='Replace the overrides, e.g. {"CPUBottleneck_threshold": 40}; re-runs the '
    "rules. The job's owner or staff only.",
)
@api_view(["GET", "PUT"])
def parameters_view(request, job_id: int):
    job = get_object_or_404(TrainingJob, pk=job_id)
    if request.method == "PUT":
        require_can_change(request.user, job)
        if not isinstance(request.data, dict):
            raise ValidationError(
                {"detail": 'Send an object such as {"CPUBottleneck_threshold": 40}.'}
            )
        try:
            logic.set_overrides(job, dict(request.data), request.user)
        except ValueError as exc:
            raise ValidationError({"detail": str(exc)}) from None
    return Response(queries.parameters_document(job))


@extend_schema(responses={(200, "text/html"): OpenApiTypes.STR, 413: None})
@api_view(["GET"])
@content_negotiation_class(JsonErrors)
def report_html_view(request, job_id: int):
    job = get_object_or_404(TrainingJob, pk=job_id)
    window = job.window_for(request.user)
    logic.request_if_missing(job, window)
    # Measured in the database first: a report over the limit is never loaded here.
    refuse_oversized_report(queries.report_bytes(job, window))
    html = queries.report_page(job, window, base_url=request.build_absolute_uri("/"))
    if html is None:
        raise NotFound("The report has not been computed yet.")
    page = html.encode()
    refuse_oversized_report(len(page))
    response = HttpResponse(page, content_type="text/html; charset=utf-8")
    filename = f"profiler-report-{job.pk}.html"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def refuse_oversized_report(n_bytes: int) -> None:
    limit = settings.REPORT_MAX_BYTES
    if n_bytes > limit:
        raise AnswerTooLarge(
            f"This job's report (its findings and analyses) takes {size_text(n_bytes)}, over "
            f"this server's limit of {size_text(limit)} for a report download (REPORT_MAX_MB); "
            "its findings are on the Insights page."
        )


@extend_schema(responses=AnalysesSerializer)
@api_view(["GET"])
def analyses_view(request, job_id: int):
    job = get_object_or_404(TrainingJob, pk=job_id)
    fields = AnalysesSerializer().fields.items()
    lists = [name for name, field in fields if isinstance(field, ListField)]
    window = job.window_for(request.user)
    logic.request_if_missing(job, window)
    return Response(queries.analyses_document(job, window, lists))
