"""Insights API: rule results, rule parameters, the report download and the analyses."""

import dataclasses

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from profiler_app.core.models import PartState, TrainingJob
from profiler_app.insights.rules import PARAMETER_GROUPS, params_from_overrides
from profiler_app.reports import logic
from profiler_app.reports.models import JobInsights
from profiler_app.reports.serializers import (
    AnalysesSerializer,
    InsightsSerializer,
    ParametersSerializer,
)


def _insights(job: TrainingJob) -> JobInsights | None:
    """The job's stored insights; a job parsed before they existed gets them queued now."""
    insights = JobInsights.objects.filter(job=job).first()
    if insights is None and job.parts.filter(state=PartState.DONE).exists():
        logic.request_run(job.pk, delay_s=0)
        insights = JobInsights.objects.get(job=job)
    return insights


@extend_schema(responses=InsightsSerializer)
@api_view(["GET"])
def insights_view(request, job_id: int):
    job = get_object_or_404(TrainingJob, pk=job_id)
    insights = _insights(job)
    if insights is None:
        return Response({"status": "no_data", "computed_at": None, "requested_at": None,
                         "error": "", "report": None, "temporal": [], "window": None})  # fmt: skip
    return Response(
        {
            "status": insights.status,
            "computed_at": insights.computed_at,
            "requested_at": insights.requested_at,
            "error": insights.error,
            "report": insights.report or None,
            "temporal": insights.analyses.get("temporal", []),
            "window": insights.analyses.get("window"),
        }
    )


def _parameters(job: TrainingJob) -> dict:
    overrides = logic.overrides_of(job)
    current = params_from_overrides(overrides)
    rules = []
    for name, spec in PARAMETER_GROUPS.items():
        defaults = spec.params()
        rules.append(
            {
                "rule": name,
                "description": spec.summary,
                "parameters": [
                    {
                        "name": f.name,
                        "key": f"{name}_{f.name}",
                        "type": str(f.type),
                        "default": getattr(defaults, f.name),
                        "value": getattr(current[name], f.name),
                    }
                    for f in dataclasses.fields(spec.params)
                ],
            }
        )
    return {"overrides": overrides, "rules": rules}


@extend_schema(
    methods=["GET"], responses=ParametersSerializer,
    description="The rules' parameters with their defaults and this job's overrides.",
)  # fmt: skip
@extend_schema(
    methods=["PUT"], request=OpenApiTypes.OBJECT, responses=ParametersSerializer,
    description='Replace the overrides, e.g. {"CPUBottleneck_threshold": 40}; re-runs the rules.',
)  # fmt: skip
@api_view(["GET", "PUT"])
def parameters_view(request, job_id: int):
    job = get_object_or_404(TrainingJob, pk=job_id)
    if request.method == "PUT":
        if not isinstance(request.data, dict):
            raise ValidationError(
                {"detail": 'Send an object such as {"CPUBottleneck_threshold": 40}.'}
            )
        try:
            logic.set_overrides(job, dict(request.data), request.user)
        except ValueError as exc:
            raise ValidationError({"detail": str(exc)}) from None
    return Response(_parameters(job))


@extend_schema(responses={(200, "text/html"): OpenApiTypes.STR})
@api_view(["GET"])
def report_html_view(request, job_id: int):
    job = get_object_or_404(TrainingJob, pk=job_id)
    insights = _insights(job)
    if insights is None or not insights.html:
        raise NotFound("The report has not been computed yet.")
    # The stored page links the timeline relatively; the downloaded file is opened from disk.
    base = request.build_absolute_uri("/").rstrip("/")
    html = insights.html.replace('href="/timeline?', f'href="{base}/timeline?')
    response = HttpResponse(html, content_type="text/html; charset=utf-8")
    filename = f"profiler-report-{job.pk}.html"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@extend_schema(responses=AnalysesSerializer)
@api_view(["GET"])
def analyses_view(request, job_id: int):
    job = get_object_or_404(TrainingJob, pk=job_id)
    insights = _insights(job)
    status = "no_data" if insights is None else insights.status
    computed_at = None if insights is None else insights.computed_at
    analyses = {} if insights is None else insights.analyses
    empty: dict[str, object] = {
        str(name): []
        for name in AnalysesSerializer().fields
        if name not in ("status", "computed_at")
    }
    empty.update(
        kernels_total=0, operators_total=0, input_shapes_recorded=False,
        operators_by_shape_total=0, window=None, totals=None,
    )  # fmt: skip
    return Response({**empty, **analyses, "status": status, "computed_at": computed_at})
