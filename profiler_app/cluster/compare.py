"""The job comparison, read from the aggregates written at ingest, with both jobs in one window.

Jobs of different sizes compare per step and per rank: each total is divided by the job's
rank-steps (its steps summed over its ranks; a rank without step annotations counts as one
step), so a 2-rank job and a 1-rank job doing the same work per GPU show the same figure. The
raw totals stay beside the normalised ones; whether a change is better or worse is judged on the
normalised figure only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from django.db.models import Avg, Count, Exists, F, OuterRef, Q, Sum

from profiler_app.analysis import cluster as analysis
from profiler_app.core.models import TrainingJob
from profiler_app.profiles.figures import (
    gpu_totals,
    in_window,
    is_sampled,
    span,
    timed_steps,
    window_info,
)
from profiler_app.profiles.models import (
    Annotation,
    KernelStat,
    PartSummary,
    Step,
    StepBreakdown,
    UtilizationPoint,
)
from profiler_app.traces.figures import KERNEL_TYPES, median_step_ns
from profiler_app.traces.model import DERIVED_SOURCE

DIFF_ROWS = 200
# Figures where less is better; the others (counts, spans) are shown without a verdict.
LOWER_IS_BETTER = {
    "kernel_ns",
    "compute_ns",
    "comm_ns",
    "memory_ns",
    "sync_ns",
    "step_mean_ns",
    "step_p50_ns",
    "gpu_idle_pct",
}
# Figures that are sums over ranks and steps, divided by the rank-steps.
SUMMED = {
    "kernel_runs",
    "kernel_ns",
    "gpu_op_runs",
    "compute_ns",
    "comm_ns",
    "memory_ns",
    "sync_ns",
}
# Figures per step (or shares) already: the normalised figure is the raw one.
PER_STEP = {"step_mean_ns", "step_p50_ns", "gpu_idle_pct"}


def compare(a: TrainingJob, b: TrainingJob, window: str) -> dict:
    """What changed from job A to job B, both in ``window`` (the viewer's): kernels and
    annotations (added, removed, time and count change), step time, headline figures and the
    per-rank step breakdown, each total beside its value per step and per rank."""
    ref_a, ref_b = job_ref(a, window), job_ref(b, window)
    divisors = (ref_a["rank_steps"], ref_b["rank_steps"])
    return {
        "a": ref_a,
        "b": ref_b,
        "kernels": _diff_section(_kernels(a, window), _kernels(b, window), divisors),
        "annotations": _diff_section(
            annotation_totals(a, window), annotation_totals(b, window), divisors
        ),
        "steps": {"a": step_stats(a, window), "b": step_stats(b, window)},
        "metrics": _metric_rows(metrics(a, window), metrics(b, window), divisors),
        "ranks": _rank_pairs(a, b, window),
    }


def job_ref(job: TrainingJob, window: str) -> dict:
    """The job, its window's caption, and what its totals are divided by."""
    ranks = PartSummary.objects.filter(job=job).aggregate(n=Count("rank", distinct=True))["n"]
    with_steps = (
        in_window(Step, job, window)
        .filter(captured=True)  # a collector job's figures cover its captured steps
        .values("rank")
        .annotate(n=Count("step", distinct=True))
        .values_list("rank", "n")
    )
    steps = dict(with_steps)
    return {
        "id": job.id,
        "name": job.name,
        "window": window_info(job, window),
        "ranks": ranks,
        "steps": sum(steps.values()),
        # Each rank's steps; a rank without steps is one step (the whole trace).
        "rank_steps": sum(steps.values()) + max(ranks - len(steps), 0),
    }


def _kernels(job: TrainingJob, window: str) -> pd.DataFrame:
    """Kernels only (no copies or sets), so the panel's total change is that of "Kernel time"."""
    rows = (
        in_window(KernelStat, job, window)
        .filter(category__in=KERNEL_TYPES)
        .values("name")
        .annotate(count=Sum("count"), total_ns=Sum("total_ns"))
    )
    return pd.DataFrame.from_records(list(rows), columns=["name", "count", "total_ns"])


def annotation_totals(job: TrainingJob, window: str) -> pd.DataFrame:
    """A sampled job's annotations in its captured steps only: a collector annotates every
    step, and the job's figures (and the divisor, ``job_ref``) are its captured steps'."""
    rows = in_window(Annotation, job, window)
    if is_sampled(job):
        captured = (
            Step.objects.filter(
                part_id=OuterRef("part_id"), captured=True, start_ns__lte=OuterRef("start_ns")
            )
            .annotate(end_ns=F("start_ns") + F("dur_ns"))
            .filter(end_ns__gt=OuterRef("start_ns"))
        )
        rows = rows.filter(Exists(captured))
    sums = rows.values("name").annotate(count=Count("id"), total_ns=Sum("dur_ns"))
    return pd.DataFrame.from_records(list(sums), columns=["name", "count", "total_ns"])


def _diff_section(a: pd.DataFrame, b: pd.DataFrame, divisors: tuple[int, int]) -> dict:
    """``analysis.diff`` with each time per step and per rank too, sorted by the size of the
    normalised change (the raw one grows with the number of ranks)."""
    table = analysis.diff(a, b)
    per_a, per_b = (max(d, 1) for d in divisors)
    table["norm_ns_a"] = (table["total_ns_a"] / per_a).round().astype(np.int64)
    table["norm_ns_b"] = (table["total_ns_b"] / per_b).round().astype(np.int64)
    table["norm_delta_ns"] = table["norm_ns_b"] - table["norm_ns_a"]
    order = np.lexsort((table["name"].to_numpy(), -table["norm_delta_ns"].abs().to_numpy()))
    table = table.iloc[order]
    counts = table["status"].value_counts()
    changed = table[
        (table["status"] != "changed") | (table["delta_ns"] != 0) | (table["delta_count"] != 0)
    ]
    return {
        "added": int(counts.get("added", 0)),
        "removed": int(counts.get("removed", 0)),
        "changed": int(((table["status"] == "changed") & (table["delta_ns"] != 0)).sum()),
        "total_delta_ns": int(table["delta_ns"].sum()),
        "norm_total_delta_ns": int(table["norm_ns_b"].sum() - table["norm_ns_a"].sum()),
        "rows": changed.head(DIFF_ROWS).to_dict("records"),
    }


def step_stats(job: TrainingJob, window: str) -> dict:
    """Step times over every rank's ``timed_steps`` in ``window`` (``p50_ns`` is the step
    time, ``FIGURES["step_time"]``)."""
    durations = np.array(timed_steps(job, window).values_list("dur_ns", flat=True), np.int64)
    if not len(durations):
        return {
            "count": 0,
            "mean_ns": None,
            "p50_ns": None,
            "p95_ns": None,
            "min_ns": None,
            "max_ns": None,
        }
    return {
        "count": len(durations),
        "mean_ns": int(durations.mean()),
        "p50_ns": median_step_ns(durations),
        "p95_ns": int(np.percentile(durations, 95)),
        "min_ns": int(durations.min()),
        "max_ns": int(durations.max()),
    }


def gpu_idle_pct(job: TrainingJob, window: str) -> float | None:
    """Share of the GPU utilisation points at 0 % (the complement of "GPU active"): measured
    (NVML) points where the job has any, else those derived from kernel time."""
    points = in_window(UtilizationPoint, job, window).filter(metric="gpu_util_pct")
    if points.exclude(source=DERIVED_SOURCE).exists():
        points = points.exclude(source=DERIVED_SOURCE)
    counts = points.aggregate(n=Count("id"), idle=Count("id", filter=Q(value__lte=0)))
    return round(100.0 * counts["idle"] / counts["n"], 2) if counts["n"] else None


def metrics(job: TrainingJob, window: str) -> dict[str, int | float | None]:
    """The headline figures of a job (``profiles.figures``) in ``window``."""
    events = PartSummary.objects.filter(job=job).aggregate(
        events=Sum("n_events"), ranks=Count("rank", distinct=True)
    )
    start, end = span(job, window)
    totals = gpu_totals(job, window)
    steps = step_stats(job, window)
    return {
        "ranks": events["ranks"],
        "events": events["events"],
        "profile_ns": end - start if start is not None and end is not None else None,
        "kernel_runs": totals["kernel_runs"],
        "kernel_ns": totals["kernel_ns"],
        "gpu_op_runs": totals["gpu_op_runs"],
        "compute_ns": totals["compute_ns"],
        "comm_ns": totals["comm_ns"],
        "memory_ns": totals["memory_ns"],
        "sync_ns": totals["sync_ns"],
        "step_mean_ns": steps["mean_ns"],
        "step_p50_ns": steps["p50_ns"],
        "gpu_idle_pct": gpu_idle_pct(job, window),
    }


def _normalised(key: str, value: int | float | None, divisor: int) -> float | None:
    if value is None:
        return None
    if key in PER_STEP:
        return value
    if key in SUMMED and divisor:
        return round(value / divisor, 1)
    return None


def _metric_rows(a: dict, b: dict, divisors: tuple[int, int]) -> list[dict]:
    return [
        {
            "metric": key,
            "a": a[key],
            "b": b[key],
            "norm_a": _normalised(key, a[key], divisors[0]),
            "norm_b": _normalised(key, b[key], divisors[1]),
            "better": "lower" if key in LOWER_IS_BETTER else None,
        }
        for key in a
    ]


def _rank_pairs(a: TrainingJob, b: TrainingJob, window: str) -> list[dict]:
    """Per rank both jobs have: mean step, gap, compute and tail."""
    fields = ["dur_ns", "gap_ns", "compute_ns", "tail_ns"]

    def per_rank(job: TrainingJob) -> dict[int, dict]:
        rows = (
            in_window(StepBreakdown, job, window)
            .values("rank")
            .annotate(**{f"mean_{f}": Avg(f) for f in fields})
            .values_list("rank", *[f"mean_{f}" for f in fields])
        )
        return {row[0]: dict(zip(fields, map(int, row[1:]), strict=True)) for row in rows}

    ra, rb = per_rank(a), per_rank(b)
    return [
        {
            "rank": rank,
            **{f"a_{k}": v for k, v in ra[rank].items()},
            **{f"b_{k}": v for k, v in rb[rank].items()},
        }
        for rank in sorted(ra.keys() & rb.keys())
    ]
