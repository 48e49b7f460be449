"""Job-level cluster results, computed once all of a job's ranks are read (in the insights task)."""

from __future__ import annotations

from django.db import transaction

from profiler_app.cluster.models import CollectiveWait
from profiler_app.core.models import TrainingJob
from profiler_app.insights.analyses import RankTrace
from profiler_app.insights.analyses.cluster import collective_waits


def save_collective_waits(job: TrainingJob, traces: list[RankTrace]) -> None:
    """Replace the job's per-rank collective waits with those of ``traces`` (all its ranks)."""
    waits = collective_waits(traces)
    rows = [CollectiveWait(job=job, **row) for row in waits.to_dict("records")]
    with transaction.atomic():
        CollectiveWait.objects.filter(job=job).delete()
        CollectiveWait.objects.bulk_create(rows)
