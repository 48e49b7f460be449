"""Workflows of the ingest: claim a part, parse it, store its aggregates idempotently.

Parsing is done by the pure ``profiler_app.traces`` package; this module only moves its
results into Postgres (COPY, inside one transaction that first deletes the part's old rows) and
its timeline store into media storage.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd
import psycopg
from botocore.exceptions import ConnectionClosedError, ReadTimeoutError
from botocore.exceptions import ConnectionError as BucketConnectionError
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from profiler_app.core import storage
from profiler_app.core.logic import send_ingest
from profiler_app.core.models import Node, PartState, ProfilePart
from profiler_app.ingest.broker import waiting_part_ids
from profiler_app.ingest.heartbeat import Heartbeat, close_connection
from profiler_app.ingest.models import (
    Annotation,
    CollectiveStat,
    GpuActivity,
    IngestRun,
    KernelStat,
    MemoryAllocator,
    MemoryOperation,
    MemoryPeak,
    MemoryPoint,
    PartSummary,
    RankOverlap,
    Step,
    StepBreakdown,
    TimelineTrack,
    UtilizationPoint,
)
from profiler_app.ingest.signals import store_written
from profiler_app.ingest.text import clean_column, clean_json, storable
from profiler_app.insights.analyses.cluster import (
    COLLECTIVE_COLUMNS,
    STEP_COLUMNS,
    ClusterFrames,
    frames_from_store,
)
from profiler_app.lib.disk import disk_full
from profiler_app.traces import IngestResult, Limits, TraceFormatError, ingest_trace
from profiler_app.traces.window import IN_BOTH, IN_COMPLETE_STEPS, IN_WHOLE_TRACE

log = logging.getLogger(__name__)
T = TypeVar("T")

AGGREGATE_TABLES = (
    PartSummary,
    TimelineTrack,
    KernelStat,
    GpuActivity,
    MemoryOperation,
    Step,
    Annotation,
    UtilizationPoint,
    StepBreakdown,
    CollectiveStat,
    RankOverlap,
    MemoryPoint,
    MemoryPeak,
    MemoryAllocator,
)
PROGRESS_EVERY_S = 1.0
ERROR_CHARS = 2000
# Parts the ingest sweep queues again at most per run (the rest wait for the next run).
SWEEP_BATCH = 500


_decode_pool: ProcessPoolExecutor | None = None


def decode_pool() -> tuple[ProcessPoolExecutor | None, int]:
    """Worker processes that decode JSON slices in parallel (TRACE_PARSE_PROCESSES, default 0:
    decode in the task's own process). Started once per Celery worker process and reused."""
    global _decode_pool
    processes = settings.TRACE_PARSE_PROCESSES
    if processes <= 0:
        return None, 0
    if _decode_pool is None:
        _decode_pool = ProcessPoolExecutor(
            processes, mp_context=multiprocessing.get_context("spawn")
        )
    return _decode_pool, processes


def limits() -> Limits:
    return Limits(max_decompressed_bytes=settings.TRACE_MAX_DECOMPRESSED_BYTES)


def part_exists(part_id: int) -> bool:
    return ProfilePart.objects.filter(id=part_id).exists()


def claim(part_id: int, task_id: str) -> bool:
    """Atomically take a pending part for this task; True if this task should parse it.

    A task redelivered after its worker died (same task id, part still "processing") takes the
    part again, so a killed worker's part is redone rather than stuck (the sweep queues it again
    when the broker does not). Each take counts: a part whose parse keeps killing its worker
    (out of memory, say) fails after ``INGEST_MAX_PARSE_ATTEMPTS`` tries instead of looping.
    """
    now = timezone.now()
    fields = {
        "state": PartState.PROCESSING,
        "started_at": now,
        "updated_at": now,
        "error": "",
        "progress": 0.0,
        "parse_attempts": F("parse_attempts") + 1,
    }
    with transaction.atomic():
        taken = ProfilePart.objects.filter(id=part_id, state=PartState.PENDING).update(**fields)
        if not taken:
            taken = ProfilePart.objects.filter(
                id=part_id, state=PartState.PROCESSING, ingest_run__task_id=task_id
            ).update(**fields)
        if taken:
            IngestRun.objects.update_or_create(
                part_id=part_id, defaults={"task_id": task_id, "claimed_at": now}
            )
    if not taken:
        return False
    attempts = ProfilePart.objects.values_list("parse_attempts", flat=True).get(id=part_id)
    deaths = attempts - 1
    if deaths >= settings.INGEST_MAX_PARSE_ATTEMPTS:
        mark_failed(
            part_id,
            task_id,
            f"The parse of this part was cut short {deaths} times (its worker died: out of "
            "memory, or stopped; or it lost the database), so it is not tried again. Reprocess "
            "it to try once more.",
        )
        return False
    return True


def sweep_unfinished() -> list[int]:
    """Queue again the parts whose task was lost; returns their ids.

    A part "processing" whose heartbeat is older than ``INGEST_STALL_SECONDS`` lost its worker
    (killed, or its parse met an outage). A part "pending" that long whose task is not waiting
    in the ingest queue lost its message (queued while the broker was down, or the broker lost
    it); one still waiting counts as alive and is looked at again a stall period later.

    A worker that is merely cut off from the database meanwhile loses nothing but time: its
    results are refused (the part is no longer its claim) and the new task parses it again.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=settings.INGEST_STALL_SECONDS)
    with transaction.atomic():
        rows = list(
            ProfilePart.objects.select_for_update(skip_locked=True)
            .filter(state__in=(PartState.PENDING, PartState.PROCESSING), updated_at__lt=stale)
            .order_by("updated_at")
            .values_list("id", "state")[:SWEEP_BATCH]
        )
        pending = any(state == PartState.PENDING for _, state in rows)
        # Unreadable broker: each is sent again (a copy of a waiting one is harmless).
        waiting = (waiting_part_ids() or set()) if pending else set()
        lost = [(i, s) for i, s in rows if s == PartState.PROCESSING or i not in waiting]
        ProfilePart.objects.filter(id__in=[i for i, _ in rows]).update(updated_at=now)
        ProfilePart.objects.filter(id__in=[i for i, _ in lost]).update(state=PartState.PENDING)
    for part_id, state in lost:
        log.warning(
            "Part %s (%s) showed no sign of life since %s: queued again", part_id, state, stale
        )
        send_ingest(part_id)
    return [i for i, _ in lost]


def stamp_part(part_id: int, task_id: str) -> int:
    """The parse's heartbeat: 1 while the part is still this task's claim, else 0."""
    return ProfilePart.objects.filter(
        id=part_id, state=PartState.PROCESSING, ingest_run__task_id=task_id
    ).update(updated_at=timezone.now())


class ClaimLost(Exception):
    """The part stopped being this parse's (reprocessed, deleted, or swept as dead)."""


def parse_claimed_part(part_id: int, task_id: str) -> bool:
    """Parse a part this task has claimed; ends with the part "done" or "failed" (or "pending"
    again when the database went away meanwhile). True when its results were stored."""
    with Heartbeat(partial(stamp_part, part_id, task_id), f"part {part_id}") as beat:
        return _parse(part_id, task_id, beat)


def _parse(part_id: int, task_id: str, beat: Heartbeat) -> bool:
    part = ProfilePart.objects.select_related("node").filter(id=part_id).first()
    if part is None:  # deleted since the claim (with its job, say): nothing to parse
        return False
    # Per task: a part reprocessed while it is parsed has two parses writing at once.
    incoming = storage.new_store_folder(part.job_id, part_id, task_id)
    key = storage.store_key(part.job_id, part_id, task_id)
    executor, processes = decode_pool()
    failure = None
    outage = False
    try:
        with contextlib.ExitStack() as stack:
            raw = patiently(
                lambda: stack.enter_context(storage.raw_file_on_disk(part.file.name or "")),
                f"part {part_id}'s raw file",
            )
            result = ingest_trace(
                raw,
                part.kind,
                incoming,
                limits(),
                progress=_progress_writer(part_id, task_id, beat),
                executor=executor,
                workers=processes,
            )
        cluster = frames_from_store(incoming, part.rank, result.aggregates.steps, result.cut)
        store_written.send(sender=ProfilePart, part_id=part_id, store_dir=incoming)
        patiently(lambda: storage.stage_store(incoming, key), f"part {part_id}'s store")
    except ClaimLost:
        log.info("Part %s is no longer this parse's (%s): stopped", part_id, task_id)
        discard(incoming, key)
        return False
    except storage.StorageError as exc:
        failure = storage_failure_message(exc)
    except FileNotFoundError as exc:
        failure = storage_gone_message(part_id, exc)
    except TraceFormatError as exc:
        failure = f"This file could not be read: {exc}"
    except MemoryError:
        failure = (
            "This part needs more memory than a worker may use (WORKER_MEMORY_LIMIT_MB = "
            f"{settings.WORKER_MEMORY_LIMIT_MB:,} MB)."
        )
    except Exception as exc:
        outage = database_lost(exc)
        if outage:
            log.warning("Part %s lost the database while it was parsed: %s", part_id, exc)
        else:
            failure = unexpected_failure_message(part_id, exc)
    # Recorded here, past the except blocks: the parse's memory is freed with its traceback.
    if outage or failure is not None:
        discard(incoming, key)
        if failure is None:
            requeue(part_id, task_id)
        else:
            mark_failed(part_id, task_id, failure)
        return False
    try:
        stored = save_result(part, task_id, result, incoming, key, cluster)
    except Exception as exc:  # the transaction rolled back: the part's old rows are intact
        discard(incoming, key)
        if database_lost(exc):
            log.warning("Part %s lost the database while its results were stored", part_id)
            requeue(part_id, task_id)
        else:
            log.exception("Storing the results of part %s failed", part_id)
            mark_failed(part_id, task_id, store_failure_message(exc))
        return False
    if not stored:
        discard(incoming, key)
    return stored


def unexpected_failure_message(part_id: int, exc: Exception) -> str:
    if disk_full(exc):
        log.warning("Part %s: the disk is full (%s)", part_id, exc)
        return (
            "This part could not be parsed: the server's disk is full. Nothing of this part was "
            "changed; free some space (or ask an administrator to), then reprocess it."
        )
    if part_exists(part_id):
        log.exception("Parsing part %s failed", part_id)  # the details, for the admins
    else:  # deleted during the parse, its files from under it: nothing went wrong
        log.info("Part %s was deleted while it was parsed", part_id)
    return (
        "This file could not be parsed: the server met an unexpected problem with it "
        f"(part {part_id}; the worker's log has the details). Reprocess it to try again."
    )


def _causes(exc: BaseException):
    """The exception and those it was raised from or while handling (a wrapper's cause)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def database_lost(exc: BaseException) -> bool:
    """The connection to PostgreSQL broke (an outage, a restart), as opposed to a refusal."""
    if not isinstance(
        exc, OperationalError | InterfaceError | psycopg.OperationalError | psycopg.InterfaceError
    ):
        return False
    try:
        usable = connection.connection is not None and connection.is_usable()
    except DatabaseError:
        usable = False
    if not usable:
        close_connection()  # the next query connects afresh
    return not usable


def storage_unreachable(exc: BaseException) -> bool:
    """The bucket did not answer (refused, timed out), as opposed to refusing a request."""
    kinds = (BucketConnectionError, ReadTimeoutError, ConnectionClosedError)
    return any(isinstance(e, kinds) for e in _causes(exc))


def patiently(action: Callable[[], T], what: str) -> T:
    """``action()``, tried again while the bucket is out of reach (a restart, a network
    outage) for up to INGEST_BUCKET_RETRY_SECONDS; then its StorageError. A refusal (denied,
    no such bucket) is raised at once: waiting would not change it."""
    deadline = time.monotonic() + settings.INGEST_BUCKET_RETRY_SECONDS
    wait_s = 1.0
    while True:
        try:
            return action()
        except storage.StorageError as exc:
            left_s = deadline - time.monotonic()
            if not storage_unreachable(exc) or left_s <= 0:
                raise
            log.warning("The bucket is out of reach for %s; trying again: %s", what, exc)
        time.sleep(min(wait_s, left_s))  # the last try falls on the deadline, not before it
        wait_s = min(wait_s * 2, 15.0)


def storage_failure_message(exc: storage.StorageError) -> str:
    if storage_unreachable(exc):
        return (
            "This part could not be parsed: the storage bucket could not be reached (tried "
            f"for {settings.INGEST_BUCKET_RETRY_SECONDS:.0f} s; {exc}) Nothing of this part was "
            "changed; reprocess it once the bucket is back."
        )
    if disk_full(exc):
        return (
            "This part could not be parsed: the server's disk is full. Nothing of this part was "
            "changed; free some space (or ask an administrator to), then reprocess it."
        )
    return f"{exc} Nothing of this part was changed; reprocess it to try again."


def discard(incoming: Path, key: str) -> None:
    """What the parse wrote, removed if it can be: a cleanup that fails (the bucket is down)
    is logged and never keeps the part from being marked."""
    try:
        storage.discard_store(incoming, key)
    except (storage.StorageError, OSError) as exc:
        log.warning("The store of a parse at %s could not be removed: %s", key, exc)


def requeue(part_id: int, task_id: str) -> None:
    """The parse met a database outage: the part goes back to "pending" and its task to the
    queue now if the database is back, else the sweep does both once it is."""
    try:
        released = ProfilePart.objects.filter(
            id=part_id, state=PartState.PROCESSING, ingest_run__task_id=task_id
        ).update(state=PartState.PENDING, updated_at=timezone.now())
    except DatabaseError as exc:
        log.warning("Part %s is left for the ingest sweep (the database is down: %s)", part_id, exc)
        return
    if released:
        send_ingest(part_id)


def storage_gone_message(part_id: int, exc: FileNotFoundError) -> str:
    if part_exists(part_id):  # else deleted during the parse: the failure is never shown
        log.warning("Part %s: a file went missing while it was parsed (%s)", part_id, exc)
    return (
        "The uploaded file is no longer in the server's storage (removed by retention, or "
        "by hand), so this part cannot be parsed. Upload the file again."
    )


def store_failure_message(exc: Exception) -> str:
    if any(isinstance(e, psycopg.errors.DiskFull) for e in _causes(exc)):
        return (
            "This file was read, but its results could not be stored: the database's disk is "
            "full. Free some space (or ask an administrator to), then reprocess it."
        )
    if disk_full(exc):
        return (
            "This file was read, but its results could not be stored: the server's disk is "
            "full. Free some space (or ask an administrator to), then reprocess it."
        )
    # COPY runs on psycopg's own cursor, whose errors Django does not wrap.
    if isinstance(exc, DatabaseError | psycopg.Error):
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return (
            "This file was read, but its results could not be stored: the database refused "
            f"a value ({reason})."
        )
    return f"This file was read, but its results could not be stored ({type(exc).__name__})."


def _progress_writer(part_id: int, task_id: str, beat: Heartbeat):
    last = [0.0]

    def write(fraction: float) -> None:
        if beat.lost and not stamp_part(part_id, task_id):
            raise ClaimLost(part_id)
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_S:
            last[0] = now
            # Parsing reaches 95%; storing the results is the rest.
            try:
                ProfilePart.objects.filter(id=part_id).update(
                    progress=round(fraction * 0.95, 3), updated_at=timezone.now()
                )
            except DatabaseError:  # an outage: the parse goes on, the heartbeat says so
                close_connection()

    return write


def mark_failed(part_id: int, task_id: str, message: str) -> None:
    ProfilePart.objects.filter(
        id=part_id, state=PartState.PROCESSING, ingest_run__task_id=task_id
    ).update(state=PartState.FAILED, error=message[:ERROR_CHARS], finished_at=timezone.now())


def save_result(
    part: ProfilePart,
    task_id: str,
    result: IngestResult,
    incoming: Path,
    key: str,
    cluster: ClusterFrames,
) -> bool:
    """Put the store parsed into ``incoming`` (and staged at ``key``) in place, replace the
    part's rows with ``result`` and mark it done, in one transaction, if the part is still this
    task's (it may have been reprocessed or deleted meanwhile: False, and ``incoming`` is the
    caller's)."""
    with transaction.atomic():
        locked = (
            ProfilePart.objects.select_for_update()
            .filter(id=part.pk, state=PartState.PROCESSING, ingest_run__task_id=task_id)
            .first()
        )
        if locked is None:  # reprocessed (the newer run writes store and rows), or deleted
            return False
        storage.place_store(incoming, key)
        delete_part_rows(part.pk)
        _insert(part, result, key, cluster)
        _record_node_devices(part.node_id, result.metadata)
        ProfilePart.objects.filter(id=part.pk).update(
            state=PartState.DONE,
            progress=1.0,
            error="",
            warning=storable(result.metadata.get("read_warning", "")),
            finished_at=timezone.now(),
        )
        job_id, part_id = part.job_id, part.pk
        # Robust: the part is stored; a bucket out of reach only leaves the old store behind.
        transaction.on_commit(
            lambda: storage.remove_older_stores(job_id, part_id, key), robust=True
        )
    return True


def _record_node_devices(node_id: int, metadata: dict) -> None:
    """A node has as many GPUs and CPUs as the most any of its parts recorded."""
    for field in ("gpu_count", "cpu_count"):
        count = metadata.get(field)
        if count is not None:
            Node.objects.filter(id=node_id).filter(
                Q(**{f"{field}__isnull": True}) | Q(**{f"{field}__lt": count})
            ).update(**{field: count})


def delete_part_rows(part_id: int) -> None:
    for model in AGGREGATE_TABLES:
        model.objects.filter(part_id=part_id).delete()


def _insert(part: ProfilePart, result: IngestResult, key: str, cluster: ClusterFrames) -> None:
    agg, cut = result.aggregates, result.cut
    common = {"job_id": part.job_id, "part_id": part.pk, "node_id": part.node_id, "rank": part.rank}
    PartSummary.objects.create(
        **common,
        start_ns=agg.start_ns,
        end_ns=agg.end_ns,
        n_events=result.store.n_events,
        event_counts=agg.event_counts,
        metadata=clean_json(_jsonable(result.metadata)),
        store_path=key,
        last_step_start_ns=None if cut is None else cut.last_step_start_ns,
    )
    tracks = result.store.tracks
    _copy(
        TimelineTrack,
        common,
        tracks.assign(
            start_ns=tracks["start_ns"].astype("Int64"), end_ns=tracks["end_ns"].astype("Int64")
        ),
        [
            "track",
            "on_device",
            "pid",
            "tid",
            "label",
            "first_row",
            "n_rows",
            "start_ns",
            "end_ns",
            "max_dur_ns",
        ],
    )
    # Sums: one row per window, or one row for both when the part has no complete-steps window.
    steps = result.complete_steps
    by_window = (
        [(IN_BOTH, agg, cluster.whole)]
        if cut is None or steps is None or cluster.complete_steps is None
        else [
            (IN_WHOLE_TRACE, agg, cluster.whole),
            (IN_COMPLETE_STEPS, steps, cluster.complete_steps),
        ]
    )
    for windows, sums, frames in by_window:
        rows = {**common, "windows": windows}
        _copy(
            KernelStat,
            rows,
            sums.kernels.rename(columns={"sumsq": "sum_sq_ns2"}),
            [
                "device",
                "name",
                "category",
                "precision",
                "count",
                "total_ns",
                "min_ns",
                "max_ns",
                "sum_sq_ns2",
            ],
        )
        _copy(GpuActivity, rows, sums.activities, ["device", "activity", "count", "total_ns"])
        _copy(
            MemoryOperation,
            rows,
            sums.memory_ops,
            ["device", "operation", "count", "total_ns", "bytes"],
        )
        _copy(CollectiveStat, rows, frames.collectives, COLLECTIVE_COLUMNS)
        RankOverlap.objects.create(**rows, comm_ns=frames.comm_ns, overlap_ns=frames.overlap_ns)
    # Time-stamped rows: in both windows when before the cut, else in the whole trace only.
    for model, frame, stamp, columns in (
        (Step, agg.steps, "start_ns", ["step", "name", "start_ns", "dur_ns", "captured"]),
        (Annotation, agg.annotations, "start_ns", ["name", "start_ns", "dur_ns"]),
        (
            UtilizationPoint,
            agg.series,
            "time_ns",
            ["metric", "device", "source", "name", "time_ns", "value"],
        ),
        (StepBreakdown, cluster.whole.steps, "start_ns", STEP_COLUMNS),
    ):
        in_windows = np.full(len(frame), IN_BOTH, dtype=np.int64)
        if cut is not None:
            in_windows[~cut.before(frame[stamp].to_numpy())] = IN_WHOLE_TRACE
        _copy(model, common, frame.assign(windows=in_windows), [*columns, "windows"])
    memory = result.memory
    _copy(MemoryPoint, common, memory.curve, list(memory.curve.columns))
    MemoryPeak.objects.bulk_create(
        MemoryPeak(**common, **row) for row in memory.peaks.to_dict("records")
    )
    _copy(MemoryAllocator, common, memory.operators, list(memory.operators.columns))


def _copy(model, common: dict, frame: pd.DataFrame, columns: list[str]) -> None:
    """Bulk-insert a frame with Postgres COPY (psycopg 3); rows get the part's common ids.
    Text is cleaned first (NUL, lone surrogates, over-long names: see ``ingest.text``)."""
    if frame.empty:
        return
    names = [*common, *columns]
    table = connection.ops.quote_name(model._meta.db_table)
    fields = ", ".join(connection.ops.quote_name(n) for n in names)
    values = [_column(model, frame[c], c).tolist() for c in columns]
    fixed = tuple(common.values())
    with connection.cursor() as cursor, cursor.copy(f"COPY {table} ({fields}) FROM STDIN") as copy:
        for row in zip(*values, strict=True):
            copy.write_row(fixed + row)


def _column(model, values: pd.Series, name: str) -> pd.Series:
    field = model._meta.get_field(name)
    if field.get_internal_type() in ("CharField", "TextField"):
        values = clean_column(values, field.max_length)
    return values.astype(object).where(values.notna(), None)


def _jsonable(value):
    """Trace metadata as plain JSON (numpy numbers and tuples become Python ones)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item"):
        return value.item()
    return value
