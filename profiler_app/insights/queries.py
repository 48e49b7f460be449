"""What the insights pages read: the job's rule results, parameters, analyses and report page,
as the API returns them, in the viewer's window: each window has its own computed insights.
Reading never queues the job's own window (jobs parsed before their insights existed get them
from the beat sweep, ``logic.queue_missing``); the views queue the other window's first run
when a viewer who sees the job in it asks (``logic.request_if_missing``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.db.models import BigIntegerField, ExpressionWrapper, Func, TextField
from django.db.models.functions import Cast

from profiler_app.core.models import PartState, TrainingJob
from profiler_app.history.models import VerdictStatus
from profiler_app.history.queries import stored_verdict
from profiler_app.insights.inputs import job_info
from profiler_app.insights.logic import overrides_of
from profiler_app.insights.models import InsightsStatus, JobInsights
from profiler_app.insights.pure.report_html import render_html
from profiler_app.insights.pure.rules import PARAMETER_GROUPS, params_from_overrides

# The analyses' lists and totals before any run stored them.
EMPTY_TOTALS: dict[str, Any] = {
    "kernels_total": 0,
    "operators_total": 0,
    "input_shapes_recorded": False,
    "operators_by_shape_total": 0,
    "window": None,
    "totals": None,
}


def _status(job: TrainingJob, insights: JobInsights | None) -> str:
    if insights is not None:
        return insights.status
    # Parsed before insights existed: the sweep queues them within a minute.
    parsed = job.parts.filter(state=PartState.DONE).exists()
    return InsightsStatus.QUEUED if parsed else "no_data"


def insights_document(job: TrainingJob, window: str) -> dict[str, Any]:
    """The rule results as a viewer who sees ``job`` in ``window`` reads them."""
    insights = JobInsights.objects.filter(job=job, window=window).first()
    if insights is None:
        return {
            "status": _status(job, None),
            "computed_at": None,
            "requested_at": None,
            "error": "",
            "report": None,
            "temporal": [],
            "window": None,
        }
    return {
        "status": insights.status,
        "computed_at": insights.computed_at,
        "requested_at": insights.requested_at,
        "error": insights.error,
        "report": insights.report or None,
        "temporal": insights.analyses.get("temporal", []),
        "window": insights.analyses.get("window"),
    }


def analyses_document(job: TrainingJob, window: str, list_fields: list[str]) -> dict[str, Any]:
    """The stored analyses as a viewer who sees ``job`` in ``window`` reads them;
    ``list_fields`` (the serializer's) are empty lists before a run."""
    insights = JobInsights.objects.filter(job=job, window=window).first()
    stored = insights.analyses if insights is not None else {}
    return {
        **{name: [] for name in list_fields},
        **EMPTY_TOTALS,
        **stored,
        "status": _status(job, insights),
        "computed_at": insights.computed_at if insights is not None else None,
    }


def parameters_document(job: TrainingJob) -> dict[str, Any]:
    """Every rule's parameters with their defaults, and the values this job's overrides give."""
    overrides = overrides_of(job)
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


def report_bytes(job: TrainingJob, window: str) -> int:
    """The bytes of the computed report and analyses in ``window`` as stored (JSON text),
    measured by Postgres: nothing of them is loaded."""
    size = Func(Cast("report", TextField()), function="octet_length") + Func(
        Cast("analyses", TextField()), function="octet_length"
    )
    found = (
        JobInsights.objects.filter(job=job, window=window, status=InsightsStatus.DONE)
        .annotate(stored_bytes=ExpressionWrapper(size, output_field=BigIntegerField()))
        .values_list("stored_bytes", flat=True)
        .first()
    )
    return found or 0


def report_page(job: TrainingJob, window: str, base_url: str) -> str | None:
    """The report in ``window`` as one self-contained HTML page with timeline links under
    ``base_url`` (the file is opened from disk); None before the rules ran."""
    found = JobInsights.objects.filter(job=job, window=window, status=InsightsStatus.DONE)
    insights = found.first()
    if insights is None or not insights.report:
        return None
    verdict = stored_verdict(job)
    shown = verdict if verdict["status"] != VerdictStatus.PENDING else None
    return render_html(insights.report, base_url, job_info(job, window), insights.analyses, shown)
