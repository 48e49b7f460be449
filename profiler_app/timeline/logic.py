"""A job's timeline in the web process: the indexes of its processed parts and its sampled
series, opened once and kept in bounded caches (an index is memory-mapped, so keeping one open
costs address space, not memory)."""

from __future__ import annotations

import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import psutil
from cachetools import LRUCache, cached
from cachetools.keys import hashkey
from django.conf import settings

from profiler_app.core.models import PartState, TrainingJob
from profiler_app.lib.memory import hand_back_freed
from profiler_app.profiles.models import MemoryPoint, PartSummary, Step, UtilizationPoint
from profiler_app.timeline.pure.index import (
    READ_AHEAD,
    IndexNotBuilt,
    PartIndex,
    open_built_index,
)
from profiler_app.timeline.pure.query import JobTimeline
from profiler_app.timeline.pure.series import Series, from_frame
from profiler_app.timeline.pure.tree import Part

# Sources drawn from samples; "kernel_busy" utilisation is recomputed from the index instead,
# at the resolution of the view.
SAMPLED_SOURCES = ("nvml", "psutil", "counter")
OPEN_THREADS = 8
CPU_DEVICE_TYPE = 0  # c10's DeviceType of [memory] events; the others are accelerators


class TimelineNotReady(Exception):
    """Some of the job's parts have no index yet: the store sweep builds it (never a request:
    ``profiles.store_products``)."""


# A part counts one, and one more per thousand lanes: the lanes of a trace of 200,000 threads
# take 100 MB, as much as a few hundred ordinary parts.
_LANES_PER_PART_UNIT = 1000


@cached(
    LRUCache(
        maxsize=getattr(settings, "TIMELINE_OPEN_PARTS", 512),
        getsizeof=lambda index: 1 + len(index.lanes) // _LANES_PER_PART_UNIT,
    ),
    # A parse writes a new summary row: a part parsed again is opened again.
    key=lambda summary: hashkey(summary.pk, summary.store_path),
    lock=threading.Lock(),
)
def part_index(summary: PartSummary) -> PartIndex:
    """The part's index as the worker built it."""
    try:
        return open_built_index(summary.store)
    except IndexNotBuilt:
        raise TimelineNotReady(summary.part_id) from None


def _series(job: TrainingJob) -> list[Series]:
    rows = (
        UtilizationPoint.objects.filter(
            job=job, part__state=PartState.DONE, source__in=SAMPLED_SOURCES
        )
        .order_by()
        .values_list("node__name", "metric", "device", "name", "time_ns", "value")
    )
    columns = ["node", "metric", "device", "name", "time_ns", "value"]
    return from_frame(pd.DataFrame([*rows, *_memory_rows(job)], columns=columns))


def _memory_rows(job: TrainingJob) -> list[tuple]:
    """The memory view's curves (from [memory] events) as counter samples: per GPU, allocated
    and reserved; the CPU's allocated per process. Down-sampled at ingest, peaks kept."""
    rows: list[tuple] = []
    points = (
        MemoryPoint.objects.filter(job=job, part__state=PartState.DONE)
        .order_by()
        .values_list(
            "node__name", "rank", "device_type", "device_id", "time_ns", "allocated", "reserved"
        )
    )
    for node, rank, device_type, device_id, time_ns, allocated, reserved in points:
        if device_type == CPU_DEVICE_TYPE:
            rows.append((node, "torch_cpu_allocated_bytes", -1, f"rank {rank}", time_ns, allocated))
        else:
            rows.append((node, "torch_allocated_bytes", device_id, "", time_ns, allocated))
            rows.append((node, "torch_reserved_bytes", device_id, "", time_ns, reserved))
    return rows


def job_timeline(job: TrainingJob) -> JobTimeline:
    """The timeline of the job's processed parts; rebuilt when a part finishes or is redone."""
    summaries = (
        PartSummary.objects.filter(job=job, part__state=PartState.DONE)
        .select_related("part", "node")
        .order_by("part_id")
    )
    return _open_job_timeline(job, tuple(summaries))


# Open timelines are kept up to this many tree nodes in all, each job counted as at least an
# eighth of it (so at most 8 jobs). Their memory goes with their nodes; a larger job is opened
# for each request. The children of a large group, threads or processes, are no nodes until
# read (``tree.LazyGroup``): a job of 200,000 threads or processes keeps a handful (its lanes
# are its part's index's, counted by ``part_index``'s cache). Made at opening, the 600,000
# nodes of a job of 200,000 processes kept 750 MB and were past this bound: the soak's three
# readers of that job opened it at every request and waited up to 60 s.
TIMELINE_OPEN_NODES = getattr(settings, "TIMELINE_OPEN_NODES", 600_000)


def _timeline_weight(timeline: JobTimeline) -> int:
    return max(len(timeline.nodes), TIMELINE_OPEN_NODES // 8)


@cached(
    LRUCache(maxsize=TIMELINE_OPEN_NODES, getsizeof=_timeline_weight),
    key=lambda job, summaries: hashkey(
        job.pk, *((s.part_id, s.part.finished_at) for s in summaries)
    ),
    # Readers of a job not open yet wait for the one opening it: six readers of a
    # 200,000-thread job each built its tree, 12 to 76 s each, 768 MB more in one process.
    condition=threading.Condition(),
)
def _open_job_timeline(job: TrainingJob, summaries: tuple[PartSummary, ...]) -> JobTimeline:
    # Opened side by side: from a bucket, each part's first files arrive over the network.
    with ThreadPoolExecutor(OPEN_THREADS) as pool:
        indexes = list(pool.map(part_index, summaries))
    parts = [
        Part(s.part_id, s.node.name, s.rank, s.part.pid, index)
        for s, index in zip(summaries, indexes, strict=True)
    ]
    timeline = JobTimeline(parts, _series(job))
    # What opening it freed (decoded lanes, lists), and what the timeline holds once the
    # cache lets it go, go back to the system: the process's size returns after a large job.
    hand_back_freed()
    weakref.finalize(timeline, hand_back_freed)
    return timeline


_read_ahead_started: weakref.WeakSet[JobTimeline] = weakref.WeakSet()
_read_ahead_lock = threading.Lock()


def read_ahead(timeline: JobTimeline) -> None:
    """Once per opened timeline, once its first view is drawn (reading ahead before would
    delay it: 0.4 s cold for a 100M-event job, 2.8 s behind the read-ahead), brings the
    arrays its views read into the page cache in the background. With the page cache
    dropped, 40 ranges' totals over 16 x 6.3M events then took p95 157 ms and at most
    0.45 s, against 252 ms and 4.9 s."""
    with _read_ahead_lock:
        if timeline in _read_ahead_started:
            return
        _read_ahead_started.add(timeline)
    indexes = [part.index for part in timeline.parts.values()]
    threading.Thread(target=_read_arrays_ahead, args=(indexes,), daemon=True).start()


def _read_arrays_ahead(indexes: list[PartIndex]) -> None:
    """Each array in turn over every part: what a view reads first comes first for all. At
    most half the memory free now: a job larger than that would push out its own pages."""
    budget = psutil.virtual_memory().available // 2
    for name in READ_AHEAD:
        for index in indexes:
            budget -= index.read_ahead((name,))
            if budget <= 0:
                return


def step_marks(job: TrainingJob, limit: int = 20000) -> list[dict]:
    """The training steps of the job's first rank that has any, for the band above the rows."""
    done = Step.objects.filter(job=job, part__state=PartState.DONE)
    first = done.order_by("rank").values_list("rank", flat=True).first()
    if first is None:
        return []
    rows = done.filter(rank=first).order_by("start_ns").values("name", "start_ns", "dur_ns")
    return [
        {"name": r["name"], "start_ns": str(r["start_ns"]), "dur_ns": r["dur_ns"]}
        for r in rows[:limit]
    ]
