"""StepOutlier and MaxInitializationTime: rules over the training steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from profiler_app.analysis.frames import JobData
from profiler_app.insights.pure.rules.base import (
    DEFAULT_SCAN_INTERVAL_US,
    NO_ACTION,
    NS_PER_S,
    RuleParams,
    RuleResult,
    RuleSpec,
    TimeRange,
    longest,
    not_evaluated,
    result,
    scan_boundaries,
    seen_by,
)

NS_PER_MIN = 60 * NS_PER_S
# The report lists at most this many outlier steps per rank and mode.
MAX_STEPS_LISTED = 20
HISTOGRAM_BINS = 30


@dataclass(frozen=True)
class StepOutlierParams(RuleParams):
    stddev: float = 5
    mode: str | None = None
    n_outliers: int = 10
    scan_interval_us: int = DEFAULT_SCAN_INTERVAL_US


@dataclass(frozen=True)
class MaxInitializationTimeParams(RuleParams):
    threshold: float = 20
    scan_interval_us: int = DEFAULT_SCAN_INTERVAL_US


OUTLIER_ADVICE = (
    "Some steps take far longer than the others. Open the slowest steps on the timeline and "
    "compare them with a normal step: typical causes are checkpointing or evaluation inside the "
    "step, data-loader stalls, garbage collection, recompilation after a shape change, and a "
    "straggling rank holding up a collective."
)
INIT_ADVICE = (
    "Training takes long to start. Check what runs before the first step: downloading or "
    "copying the data set (stream it or pre-stage it on local disk), loading a checkpoint, "
    "building or compiling the model, and waiting for other nodes to join the process group."
)


def _step_stats(durations: np.ndarray) -> dict:
    p50, p95, p99 = np.percentile(durations, (50, 95, 99))
    return {
        "count": len(durations),
        "mean_ns": float(durations.mean()),
        "std_ns": float(durations.std()),
        "min_ns": int(durations.min()),
        "p50_ns": float(p50),
        "p95_ns": float(p95),
        "p99_ns": float(p99),
        "max_ns": int(durations.max()),
    }


def evaluate_step_outlier(job: JobData, params: StepOutlierParams) -> RuleResult:
    """Steps further than ``stddev`` standard deviations from the mean of their rank and mode."""
    rule = "StepOutlier"
    steps = job.steps
    if params.mode is not None:
        steps = steps[steps["mode"] == params.mode]
    if len(steps) == 0:
        which = "" if params.mode is None else f"{params.mode} "
        return not_evaluated(rule, params, f"no {which}training steps annotated")

    ends = (steps["start_ns"] + steps["dur_ns"]).to_numpy()
    start = job.data_start_ns()
    boundaries = scan_boundaries(
        int(steps["start_ns"].min()) if start is None else start,
        max(int(ends.max()), job.data_end_ns() or 0),
        params.scan_interval_us,
    )
    evaluated = np.zeros(len(boundaries), dtype=bool)
    triggered = np.zeros(len(boundaries), dtype=bool)
    ranges: list[TimeRange] = []
    groups: dict = {}
    outliers_total = 0
    # Each (node, rank, mode) as a slice of arrays in end order: a 1,024-rank job's groups
    # took 1.7 s as pandas groups, most of it in pandas' per-group cost.
    group_of = steps.groupby(["node", "rank", "mode"], sort=True, observed=True).ngroup()
    order = np.lexsort((ends, group_of.to_numpy()))
    cuts = np.flatnonzero(np.diff(group_of.to_numpy()[order])) + 1
    columns = {c: steps[c].to_numpy()[order] for c in ("node", "rank", "mode", "step", "start_ns")}
    columns["dur_ns"], columns["end_ns"] = steps["dur_ns"].to_numpy()[order], ends[order]
    for first, stop in zip(np.r_[0, cuts], np.r_[cuts, len(order)], strict=True):
        node, rank, mode = (columns[c][first] for c in ("node", "rank", "mode"))
        group = {c: column[first:stop] for c, column in columns.items()}
        durations = group["dur_ns"].astype(np.float64)
        seen = seen_by(group["end_ns"], boundaries)
        outlier_count = np.zeros(len(boundaries), dtype=np.int64)
        for m in np.unique(seen[seen >= 2]):
            window = durations[:m]
            far = np.abs(window - window.mean()) > params.stddev * window.std()
            outlier_count[seen == m] = int(far.sum())
        evaluated |= seen >= 2
        triggered |= outlier_count > params.n_outliers
        if len(durations) < 2:
            continue
        far = np.abs(durations - durations.mean()) > params.stddev * durations.std()
        outliers_total += int(far.sum())
        ranges += [
            TimeRange(int(s), int(s + d), str(node), -1, int(rank))
            for s, d in zip(group["start_ns"][far], group["dur_ns"][far], strict=True)
        ]
        groups[f"{node} rank {rank} {mode}"] = _group_evidence(
            (node, rank, mode), durations, far, group["step"][far], group["dur_ns"][far]
        )

    if not evaluated.any():
        return not_evaluated(rule, params, "fewer than two steps per rank", len(steps))
    return result(
        rule,
        params,
        evaluated=int(evaluated.sum()),
        trigger_count=int(triggered.sum()),
        violations=outliers_total,
        datapoints=len(steps),
        evidence={"stddev": params.stddev, "n_outliers": params.n_outliers, "groups": groups},
        time_ranges=longest(ranges),
        recommendation=OUTLIER_ADVICE if triggered.any() else NO_ACTION,
    )


def _group_evidence(
    group: tuple[Any, Any, Any],
    durations: np.ndarray,
    far: np.ndarray,
    outlier_steps: np.ndarray,
    outlier_ns: np.ndarray,
) -> dict[str, Any]:
    """One (node, rank, mode)'s evidence: its step statistics, slowest outliers and the
    histogram of its other steps."""
    node, rank, mode = group
    counts, edges = np.histogram(durations[~far], bins=HISTOGRAM_BINS)
    slowest = _slowest_first(outlier_ns)[:MAX_STEPS_LISTED]
    return {
        "node": str(node),
        "rank": int(rank),
        "mode": str(mode),
        "outliers": int(far.sum()),
        "stats": _step_stats(durations),
        "outlier_steps": [
            {"step": int(outlier_steps[at]), "dur_ns": int(outlier_ns[at])} for at in slowest
        ],
        "histogram": {"counts": counts, "edges_ns": edges},
    }


def _slowest_first(dur_ns: np.ndarray) -> np.ndarray:
    """Positions from the longest, ties as pandas' ``sort_values(ascending=False)`` puts them
    (the order the report always listed them in)."""
    reversed_order = dur_ns[::-1].argsort(kind="quicksort")
    return (len(dur_ns) - 1 - reversed_order)[::-1]


def evaluate_max_initialization_time(
    job: JobData, params: MaxInitializationTimeParams
) -> RuleResult:
    """Triggers while more than ``threshold`` minutes have passed with no step started."""
    rule = "MaxInitializationTime"
    if job.job_start_ns is None:
        return not_evaluated(
            rule,
            params,
            "the job's start time is unknown (an imported trace starts where "
            "profiling started, not where the job did)",
        )
    start = job.job_start_ns
    end = job.data_end_ns() or start
    first_step = int(job.steps["start_ns"].min()) if len(job.steps) else None
    # The rule waits until the first step is seen, or until the data ends.
    waited_until = end if first_step is None else first_step
    limit = start + int(params.threshold * NS_PER_MIN)
    boundaries = scan_boundaries(start, max(end, waited_until), params.scan_interval_us)
    scan_starts = np.concatenate(([start], boundaries[:-1]))
    # A scan triggers when, at some instant in it, the limit had passed with no step started.
    late = (scan_starts < waited_until) & (boundaries > limit) & (waited_until > limit)
    looked = scan_starts <= waited_until
    evidence: dict = {
        "job_start_ns": start,
        "first_step_start_ns": first_step,
        "threshold_min": params.threshold,
        "waited_s": (waited_until - start) / NS_PER_S,
    }
    if first_step is not None:
        last_end = int((job.steps["start_ns"] + job.steps["dur_ns"]).max())
        evidence |= {
            "initialization_s": (first_step - start) / NS_PER_S,
            "training_loop_s": (last_end - first_step) / NS_PER_S,
            "finalization_s": None
            if job.job_end_ns is None
            else (job.job_end_ns - last_end) / NS_PER_S,
        }
    else:
        evidence["note"] = "no step has started yet"
    node = str(job.steps["node"].iloc[0]) if len(job.steps) else ""
    return result(
        rule,
        params,
        evaluated=int(looked.sum()),
        trigger_count=int(late.sum()),
        violations=int(late.any()),
        datapoints=len(job.steps),
        evidence=evidence,
        time_ranges=[TimeRange(start, waited_until, node, -1)] if late.any() else [],
        recommendation=INIT_ADVICE if late.any() else NO_ACTION,
    )


STEP_OUTLIER = RuleSpec(
    "StepOutlier",
    StepOutlierParams,
    evaluate_step_outlier,
    "More than n_outliers steps (of one rank and mode) lie further than stddev standard "
    "deviations from the mean step duration.",
)
MAX_INITIALIZATION_TIME = RuleSpec(
    "MaxInitializationTime",
    MaxInitializationTimeParams,
    evaluate_max_initialization_time,
    "The first training step starts more than threshold minutes after the job started.",
)
