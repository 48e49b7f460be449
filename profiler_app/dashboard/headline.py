"""The Dashboard's headline: where a step's time goes over the job's window, the GPU's mean
utilisation beside the kernels' busy share, and the one step time (``figures.step_time``).

The breakdown is taken over the window's steps (a collector job's: the steps Kineto captured,
the only ones with events): the ingest splits each part's steps (``StepSplit``, computed by
``traces.step_breakdown``), and the headline sums the parts. The NVML mean is over every
sample of the run. The top finding is not here: the page reads it from the insights the viewer's
window has (the insights app sits above this one).
"""

from __future__ import annotations

import numpy as np
from django.db.models import Avg, Count, Sum

from profiler_app.core.models import TrainingJob
from profiler_app.profiles.figures import in_window, step_time, window_info
from profiler_app.profiles.models import Step, StepSplit, UtilizationPoint
from profiler_app.traces.step_breakdown import PARTS

NVML_SOURCE = "nvml"


def headline(job: TrainingJob, window: str) -> dict:
    """The headline of ``job`` in ``window`` (``HeadlineSerializer`` says what each field is)."""
    steps = in_window(Step, job, window).filter(captured=True)
    durations = np.fromiter(steps.values_list("dur_ns", flat=True), np.int64)
    parts = split_ns(job, window)
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


def split_ns(job: TrainingJob, window: str) -> dict[str, int]:
    """Each part of the breakdown's nanoseconds, summed over the job's parts in ``window``."""
    rows = in_window(StepSplit, job, window).values("category").annotate(ns=Sum("total_ns"))
    found = {row["category"]: int(row["ns"]) for row in rows}
    return {part: found.get(part, 0) for part in PARTS}


def _nvml_mean(job: TrainingJob) -> float | None:
    """The mean of the GPUs' NVML utilisation samples over the whole run (every window)."""
    found = UtilizationPoint.objects.filter(
        job=job, metric="gpu_util_pct", source=NVML_SOURCE
    ).aggregate(mean=Avg("value"), n=Count("id"))
    return round(found["mean"], 2) if found["n"] else None
