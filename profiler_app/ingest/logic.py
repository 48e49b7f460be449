"""Workflows of the ingest: claim a part, parse it, and end it done, failed or queued again.

Parsing is done by the pure ``profiler_app.traces`` package; ``ingest.save`` stores its results
and ``ingest.failures`` words what went wrong.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from datetime import timedelta
from functools import partial
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import F
from django.utils import timezone

from profiler_app.analysis.cluster import frames_from_store
from profiler_app.core import storage
from profiler_app.core.heartbeat import Heartbeat, close_connection
from profiler_app.core.logic import send_ingest
from profiler_app.core.models import PartState, ProfilePart
from profiler_app.ingest.broker import waiting_part_ids
from profiler_app.ingest.failures import (
    database_lost,
    patiently,
    storage_failure_message,
    storage_gone_message,
    store_failure_message,
    unexpected_failure_message,
)
from profiler_app.ingest.models import IngestRun
from profiler_app.ingest.save import save_result
from profiler_app.lib.memory import hand_back_freed
from profiler_app.profiles import part_analyses
from profiler_app.profiles.store_products import build_products
from profiler_app.traces import Limits, TraceFormatError, ingest_trace
from profiler_app.traces.step_breakdown import store_breakdown

log = logging.getLogger(__name__)

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
    took: dict[str, float] = {}
    try:
        with _step(took, "events read"), contextlib.ExitStack() as stack:
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
        # The read's second half, timed inside it: the store written from the events.
        took["events read"] -= result.finish_s
        took["store written"] = result.finish_s
        with _step(took, "cluster frames"):
            cluster = frames_from_store(incoming, part.rank, result.aggregates.steps, result.cut)
        with _step(took, "step breakdown"):
            cut_ns = None if result.cut is None else result.cut.last_step_start_ns
            split = store_breakdown(incoming, result.aggregates.steps, cut_ns)
        with _step(took, "index and SQL totals"):
            build_products(incoming)  # once, before the part is done
        with _step(took, "analyses"):
            analyses = _part_analyses(incoming, part)
        with _step(took, "store kept"):
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
        with _step(took, "results saved"):
            stored = save_result(part, task_id, result, incoming, key, cluster, split)
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
        return False
    if analyses is not None:
        part_analyses.keep(part.job_id, part_id, key, analyses)
    log.info(
        "Part %s parsed (%s events) in %.1f s: %s",
        part_id,
        f"{result.store.n_events:,}",
        sum(took.values()),
        ", ".join(f"{step} {seconds:.1f} s" for step, seconds in took.items()),
    )
    return True


@contextlib.contextmanager
def _step(took: dict[str, float], name: str) -> Iterator[None]:
    """Times one step of the parse (the log says where a part's parse spent its time); what
    the step freed goes back to the system before the next, so that each step's peak comes on
    top of what the steps before it keep, no more."""
    began = time.perf_counter()
    yield
    hand_back_freed()
    took[name] = time.perf_counter() - began


def _part_analyses(store_dir: Path, part: ProfilePart) -> part_analyses.PartAnalyses | None:
    """The part's analyses from its store while it is on this disk; None when they fail
    (logged: whoever needs them computes them from the store)."""
    try:
        return part_analyses.compute(store_dir, part.rank, part.pk)
    except Exception:  # out of memory too: the part itself is parsed
        log.exception("The analyses of part %s failed: left to whoever needs them", part.pk)
        return None


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
