"""Job-level cluster results, computed once all of a job's ranks are read (in the insights task)."""

from __future__ import annotations

import pandas as pd
from django.db import transaction

from profiler_app.cluster.models import CollectiveWait
from profiler_app.core.models import TrainingJob
from profiler_app.traces.window import (
    COMPLETE_STEPS,
    IN_BOTH,
    IN_COMPLETE_STEPS,
    IN_WHOLE_TRACE,
    WHOLE_TRACE,
)


def save_collective_waits(job: TrainingJob, waits: dict[str, pd.DataFrame]) -> None:
    """Replace the job's per-rank collective waits with ``waits`` (each window's, over all its
    ranks: ``collective_waits_by_window``): one row for both where the windows agree."""
    whole, complete = waits[WHOLE_TRACE], waits[COMPLETE_STEPS]
    if whole.equals(complete):
        by_bits = {IN_BOTH: whole}
    else:
        by_bits = {IN_WHOLE_TRACE: whole, IN_COMPLETE_STEPS: complete}
    rows = [
        CollectiveWait(job=job, windows=bits, **row)
        for bits, table in by_bits.items()
        for row in table.to_dict("records")
    ]
    with transaction.atomic():
        CollectiveWait.objects.filter(job=job).delete()
        CollectiveWait.objects.bulk_create(rows)
