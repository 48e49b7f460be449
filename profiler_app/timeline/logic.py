"""A job's timeline in the web process: the indexes of its processed parts and its sampled
series, opened once and kept in bounded caches (an index is memory-mapped, so keeping one open
costs address space, not memory)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

import pandas as pd
from django.conf import settings

from profiler_app.core.models import PartState, TrainingJob
from profiler_app.ingest.models import PartSummary, Step, UtilizationPoint
from profiler_app.timeline.index import PartIndex, open_index
from profiler_app.timeline.query import JobTimeline
from profiler_app.timeline.series import Series, from_frame
from profiler_app.timeline.tree import Part

# Sources drawn from samples; "kernel_busy" utilisation is recomputed from the index instead,
# at the resolution of the view.
SAMPLED_SOURCES = ("nvml", "psutil", "counter")


class _Lru:
    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key, make):
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        value = make()
        with self.lock:
            self.items[key] = value
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return value


_indexes = _Lru(getattr(settings, "TIMELINE_OPEN_PARTS", 512))
_jobs = _Lru(getattr(settings, "TIMELINE_OPEN_JOBS", 8))
_building = threading.Lock()


def store_dir(summary: PartSummary) -> Path:
    return Path(settings.MEDIA_ROOT) / summary.store_path


def part_index(summary: PartSummary) -> PartIndex:
    """The part's index, built on first use if ingest did not build it."""
    directory = store_dir(summary)
    signature = (directory / "events.parquet").stat().st_mtime_ns

    def make() -> PartIndex:
        with _building:  # one build at a time: each holds a whole part in memory
            return open_index(directory)

    return _indexes.get((summary.part_id, signature), make)


def _series(job: TrainingJob) -> list[Series]:
    rows = (
        UtilizationPoint.objects.filter(
            job=job, part__state=PartState.DONE, source__in=SAMPLED_SOURCES
        )
        .order_by()
        .values_list("node__name", "metric", "device", "name", "time_ns", "value")
    )
    columns = ["node", "metric", "device", "name", "time_ns", "value"]
    return from_frame(pd.DataFrame(list(rows), columns=columns))


def job_timeline(job: TrainingJob) -> JobTimeline:
    """The timeline of the job's processed parts; rebuilt when a part finishes or is redone."""
    summaries = list(
        PartSummary.objects.filter(job=job, part__state=PartState.DONE)
        .select_related("part", "node")
        .order_by("part_id")
    )
    key = (job.pk, tuple((s.part_id, s.part.finished_at) for s in summaries))

    def make() -> JobTimeline:
        parts = [Part(s.part_id, s.node.name, s.rank, s.part.pid, part_index(s)) for s in summaries]
        return JobTimeline(parts, _series(job))

    return _jobs.get(key, make)


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
