"""What the history pages read: a run's verdict document and a series' runs."""

from __future__ import annotations

from typing import Any

from profiler_app.core.models import TrainingJob
from profiler_app.history import logic
from profiler_app.history.models import RunVerdict, Series, SeriesRun, VerdictStatus
from profiler_app.history.pure.regression import Thresholds, unjudged


def verdict_document(
    job: TrainingJob,
    verdict: dict[str, Any],
    baseline: TrainingJob | None,
    computed_at=None,
    window: str | None = None,
) -> dict[str, Any]:
    run = SeriesRun.objects.filter(job=job).select_related("series").first()
    return {
        "job": job.pk,
        "job_name": job.name,
        "series": run.series.name if run else None,
        "series_id": run.series_id if run else None,
        "baseline": baseline.pk if baseline else None,
        "baseline_name": baseline.name if baseline else None,
        "window": window or job.window,
        "computed_at": computed_at,
        **verdict,
    }


def stored_verdict(job: TrainingJob) -> dict[str, Any]:
    """The job's stored verdict, or a pending one while it has none."""
    stored = RunVerdict.objects.filter(job=job).select_related("baseline").first()
    if stored is None:
        pending = unjudged(
            "Not judged yet: the run is judged once its parts are parsed.",
            Thresholds(step_pct=0.0, alpha=0.0),
            VerdictStatus.PENDING,
        ).as_dict()
        return verdict_document(job, pending, None)
    return verdict_document(job, stored.result, stored.baseline, stored.computed_at, stored.window)


def checked_verdict(
    job: TrainingJob, baseline: TrainingJob | None, step_pct: float | None, use_default: bool
) -> dict[str, Any]:
    """The job judged now against ``baseline`` (the series' default when ``use_default``),
    with the series' thresholds (``step_pct`` replacing its step threshold). Not stored."""
    series = logic.membership(job).series
    if use_default:
        baseline = logic.default_baseline(job, series)
    verdict = logic.verdict_of(job, baseline, series.thresholds(step_pct))
    return verdict_document(job, verdict.as_dict(), baseline)


def runs_document(series: Series) -> list[dict[str, Any]]:
    rows = []
    for run in logic.series_runs(series):
        verdict = getattr(run.job, "verdict", None)
        rows.append(
            {
                "job_id": run.job_id,
                "job": run.job,
                "ran_at": run.ran_at,
                "is_baseline": series.baseline_id == run.job_id,
                "figures": run.figures or None,
                "verdict_status": verdict.status if verdict else None,
                "verdict_baseline": verdict.baseline_id if verdict else None,
                "change_pct": verdict.result.get("change_pct") if verdict else None,
            }
        )
    return rows
