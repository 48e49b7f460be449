"""The SQL console of a job: its parsed parts' stores, queried in a locked DuckDB."""

from __future__ import annotations

import threading

from django.conf import settings

from profiler_app.core.models import PartState, TrainingJob
from profiler_app.profiles.models import PartSummary
from profiler_app.sql.pure.console import Limits, StorePart
from profiler_app.sql.pure.isolated import IsolatedAnswer, open_isolated
from profiler_app.traces.store_files import StoreFiles
from profiler_app.traces.store_layout import TOTALS_FILE

# Queries running at once in this process: each may use SQL_MEMORY_LIMIT and SQL_THREADS.
_running = threading.BoundedSemaphore(max(1, settings.SQL_MAX_CONCURRENT))


class ConsoleBusy(Exception):
    pass


def has_totals(store: StoreFiles) -> bool:
    """The store has its event totals (``sql.pure.totals``, a product of the store written at
    ingest, so that the console's group-by queries never scan its events)."""
    try:
        return store.file(TOTALS_FILE).exists()
    except FileNotFoundError:  # not in the bucket
        return False


def job_parts(job: TrainingJob) -> list[StorePart]:
    """The job's parsed parts (only these stores are visible to its queries)."""
    summaries = (
        PartSummary.objects.filter(job=job, part__state=PartState.DONE)
        .select_related("node")
        .order_by("part_id")
    )
    return [StorePart(s.part_id, s.node.name, s.rank, s.fetch_store()) for s in summaries]


def limits() -> Limits:
    return Limits(
        timeout_s=settings.SQL_TIMEOUT_S,
        max_rows=settings.SQL_MAX_ROWS,
        max_bytes=settings.SQL_MAX_BYTES,
        memory_limit=settings.SQL_MEMORY_LIMIT,
        threads=settings.SQL_THREADS,
    )


def query_job(job: TrainingJob, query: str) -> IsolatedAnswer:
    """The query's answer, to stream, computed in a process of its own of bounded memory
    (``sql.pure.isolated``); it counts as running until it is closed."""
    if not _running.acquire(timeout=settings.SQL_TIMEOUT_S):
        raise ConsoleBusy()
    try:
        answer = open_isolated(job_parts(job), query, limits(), settings.SQL_PROCESS_MEMORY_MB)
    except BaseException:
        _running.release()
        raise
    answer.on_close.append(_running.release)
    return answer
