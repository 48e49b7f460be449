"""A job's insights computed in the test's own process, as a worker does."""

from __future__ import annotations

from profiler_app.core.models import TrainingJob
from profiler_app.insights import logic
from profiler_app.insights.models import InsightsStatus, JobInsights
from tests.conftest import wait_for


def compute_here(job: TrainingJob, window: str | None = None) -> JobInsights:
    """The job's insights in ``window`` (None: its own), computed here, DONE or FAILED.

    The job's parses asked a live worker (when one runs) for the same run: where that worker
    holds it, this waits for its run to end and then computes the follow-up it leaves queued
    (or reads its result, when it covered what was asked here)."""
    window = window or TrainingJob.objects.values_list("window", flat=True).get(pk=job.pk)
    asked = logic.request_run(job.pk, delay_s=3600, window=window)

    def ended() -> JobInsights | None:
        logic.compute(job.pk, asked, window)  # does nothing while the worker's run holds it
        row = JobInsights.objects.get(job=job, window=window)
        finished = row.status in (InsightsStatus.DONE, InsightsStatus.FAILED)
        return row if finished and row.generation >= asked else None

    return wait_for(ended, timeout=300, interval=0.2)


def rules_by_name(row: JobInsights) -> dict[str, dict]:
    """A finished run's rules and recommendations, by name (the run must have succeeded)."""
    assert row.status == InsightsStatus.DONE, row.error
    return {r["rule"]: r for r in [*row.report["rules"], *row.report["recommendations"]]}
