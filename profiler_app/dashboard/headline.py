"""The Dashboard's headline: where a step's time goes over the job's window, the GPU's mean
utilisation beside the kernels' busy share, and the one step time (``figures.step_time``).

The breakdown is taken over the window's steps (a collector job's: the steps Kineto captured,
the only ones with events) from each part's timeline store; the NVML mean over every sample of
the run. The top finding is not here: the page reads it from the insights the viewer's window
has (the insights app sits above this one).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow.compute as pc
from django.db.models import Avg, Count

from profiler_app.core.models import TrainingJob
from profiler_app.dashboard.pure.step_breakdown import PARTS, event_intervals, step_breakdown
from profiler_app.profiles.figures import in_window, step_time, window_info
from profiler_app.profiles.models import PartSummary, Step, UtilizationPoint
from profiler_app.traces.timeline_read import TimelineReader

NVML_SOURCE = "nvml"
COLUMNS = ["kind", "name", "start_ns", "dur_ns", "is_step", "captured"]


def headline(job: TrainingJob, window: str) -> dict:
    """The headline of ``job`` in ``window`` (``HeadlineSerializer`` says what each field is)."""
    steps = in_window(Step, job, window).filter(captured=True)
    durations = np.fromiter(steps.values_list("dur_ns", flat=True), np.int64)
    parts = _parts_ns(job, steps)
    step_total_ns = int(durations.sum())
    per_step = len(durations) or 1
    return {
        "over": window_info(job, window)["label"],
        "steps": len(durations),
        "step_total_ns": step_total_ns,
        "step_time": step_time(job, window),
        "breakdown": [
            {
                "part": part,
                "total_ns": parts[part],
                "per_step_ns": parts[part] // per_step,
                "share_pct": round(100 * parts[part] / step_total_ns, 2) if step_total_ns else 0,
            }
            for part in PARTS
        ],
        "kernel_busy_pct": (
            round(100 * parts["kernels"] / step_total_ns, 2) if step_total_ns else None
        ),
        "nvml_mean_pct": _nvml_mean(job),
    }


def _parts_ns(job: TrainingJob, steps) -> dict[str, int]:
    """Each part's nanoseconds summed over the ranks: a rank's steps are read from the stores
    of all its parts (a collector rank uploads many)."""
    by_rank: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for node, rank, start, dur in steps.values_list("node_id", "rank", "start_ns", "dur_ns"):
        by_rank[(node, rank)].append((start, start + dur))
    totals = dict.fromkeys(PARTS, 0)
    summaries = PartSummary.objects.filter(job=job)
    for (node, rank), intervals in by_rank.items():
        bounds = np.array(sorted(intervals), dtype=np.int64).reshape(-1, 2)
        events = _events(summaries.filter(node_id=node, rank=rank), bounds)
        for part, ns in step_breakdown((bounds[:, 0], bounds[:, 1]), events).items():
            totals[part] += ns
    return totals


def _events(summaries, bounds: np.ndarray) -> dict:
    """The rank's captured events (step annotations left out) that may fall in its steps."""
    found: dict[str, list[tuple[np.ndarray, np.ndarray]]] = defaultdict(list)
    for summary in summaries:
        if summary.end_ns is None or summary.end_ns < bounds[0, 0]:
            continue
        reader = TimelineReader(summary.store_dir)
        table = reader.read_all(COLUMNS)
        keep = pc.and_(
            pc.and_(table["captured"], pc.invert(table["is_step"])),
            pc.less(table["start_ns"], int(bounds[-1, 1])),
        )
        table = table.filter(keep)
        arrays = {c: table[c].to_numpy() for c in ("kind", "name", "start_ns", "dur_ns")}
        for part, pair in event_intervals(**arrays, strings=reader.strings).items():
            found[part].append(pair)
    return {
        part: (
            np.concatenate([s for s, _ in found[part]] or [np.empty(0, np.int64)]),
            np.concatenate([e for _, e in found[part]] or [np.empty(0, np.int64)]),
        )
        for part in PARTS[:-1]
    }


def _nvml_mean(job: TrainingJob) -> float | None:
    """The mean of the GPUs' NVML utilisation samples over the whole run (every window)."""
    found = UtilizationPoint.objects.filter(
        job=job, metric="gpu_util_pct", source=NVML_SOURCE
    ).aggregate(mean=Avg("value"), n=Count("id"))
    return round(found["mean"], 2) if found["n"] else None
