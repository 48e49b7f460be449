"""OverallSystemUsage and OverallFrameworkMetrics: summaries that never trigger on their own."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from profiler_app.analysis.frames import CPU_UTIL, CPU_UTIL_TOTAL, GPU_UTIL, METRICS, JobData
from profiler_app.insights.pure.rules.base import (
    DEFAULT_SCAN_INTERVAL_US,
    NEEDS_COLLECTOR,
    RuleParams,
    RuleResult,
    RuleSpec,
    gpu_source_label,
    job_scans,
    largest_rank,
    not_evaluated,
    of_ranks,
    pct,
    per_series,
    result,
)
from profiler_app.insights.pure.rules.snapshots import snapshot_ids

# Metrics summed over a node's devices rather than averaged: memory in use adds up.
SUMMED = ("gpu_mem_used_bytes",)
STATS = ("min", "p50", "p95", "p99", "max")
# Framework items below this share of their phase are left out of the top lists.
MIN_SHARE_PCT = 2.0
TOP_ITEMS = 10
DEVICE_PHASES = ("cpu", "gpu")


@dataclass(frozen=True)
class OverallSystemUsageParams(RuleParams):
    scan_interval_us: int = DEFAULT_SCAN_INTERVAL_US


@dataclass(frozen=True)
class OverallFrameworkMetricsParams(RuleParams):
    scan_interval_us: int = DEFAULT_SCAN_INTERVAL_US


def _node_usage(job: JobData) -> tuple[dict, int]:
    """node -> metric -> stats of the node's value per snapshot (the mean over its devices,
    or the sum for memory in use), and the number of snapshots."""
    samples = job.samples
    order = np.lexsort((samples.time_ns, samples.node, samples.metric))
    key = samples.metric[order].astype(np.int64) * len(samples.nodes) + samples.node[order]
    time_ns, value = samples.time_ns[order], samples.value[order]
    snap = snapshot_ids(key, time_ns, samples.device[order].astype(np.int64))
    new = np.r_[True, snap[1:] != snap[:-1]]
    total = np.bincount(snap, weights=value)
    first = np.flatnonzero(new)
    snap_key = key[first]
    metric_of = snap_key // len(samples.nodes)
    summed = np.isin(metric_of, [METRICS.index(m) for m in SUMMED])
    per_snapshot = np.where(summed, total, total / np.bincount(snap))
    cut = np.flatnonzero(np.diff(snap_key)) + 1
    nodes: dict = {}
    for begin, stop in zip(np.r_[0, cut], np.r_[cut, len(snap_key)], strict=True):
        metric, node = divmod(int(snap_key[begin]), len(samples.nodes))
        stats = _stats(per_snapshot[begin:stop])
        nodes.setdefault(samples.nodes[node], {})[METRICS[metric]] = stats
    return nodes, len(first)


def _stats(values: np.ndarray) -> dict:
    p50, p95, p99 = np.percentile(values, (50, 95, 99))
    return {"min": values.min(), "p50": p50, "p95": p95, "p99": p99, "max": values.max()}


def evaluate_overall_system_usage(job: JobData, params: OverallSystemUsageParams) -> RuleResult:
    rule = "OverallSystemUsage"
    if len(job.samples.time_ns) == 0:
        return not_evaluated(rule, params, f"no system metrics: {NEEDS_COLLECTOR}")
    nodes, snapshots = _node_usage(job)
    gpus = {
        f"{node} GPU {gpu}": _stats(values) for (node, gpu), _, values in per_series(job, GPU_UTIL)
    }
    boundaries = job_scans(job, job.samples.time_ns, params.scan_interval_us)
    return result(
        rule,
        params,
        evaluated=len(boundaries),
        trigger_count=0,
        violations=0,
        datapoints=snapshots,
        evidence={"gpu_source": gpu_source_label(job), "nodes": nodes, "gpus": gpus},
        recommendation=_usage_advice(nodes),
    )


def _usage_advice(nodes: dict) -> str:
    notes = []
    for node, metrics in nodes.items():
        gpu = metrics.get(GPU_UTIL)
        cpu = metrics.get(CPU_UTIL) or metrics.get(CPU_UTIL_TOTAL)
        if gpu and gpu["p95"] < 70:
            # Why, and what to do, is LowGPUUtilization's and BatchSize's to say (``causes``).
            notes.append(
                f"On {node} the GPUs are lightly used (95th percentile {gpu['p95']:.0f}%): see "
                "LowGPUUtilization and BatchSize for why and what to do."
            )
        if cpu and cpu["p95"] > 90:
            notes.append(
                f"On {node} the CPUs are nearly saturated (95th percentile {cpu['p95']:.0f}%): "
                "move pre-processing off the CPU or use an instance with more cores."
            )
    return " ".join(notes) or "System usage shows no obvious waste; see the other rules."


def evaluate_overall_framework_metrics(
    job: JobData, params: OverallFrameworkMetricsParams
) -> RuleResult:
    rule = "OverallFrameworkMetrics"
    frame = job.framework
    if len(frame) == 0 and len(job.steps) == 0:
        return not_evaluated(rule, params, "no framework events (annotations, operators, kernels)")
    totals = frame.groupby("phase", sort=True)["dur_ns"].sum()
    # CPU operators and GPU kernels run inside the annotated phases: each group gets its own
    # percentages so that nothing is counted twice.
    devices = totals[totals.index.isin(DEVICE_PHASES)]
    annotated = totals[~totals.index.isin(DEVICE_PHASES)]
    phases = {
        str(phase): {"total_ns": int(ns), "pct": pct(ns, int(group.sum()))}
        for group in (devices, annotated)
        for phase, ns in group.items()
    }
    top: dict = {}
    for phase, part in frame.groupby("phase", sort=True):
        per_name = part.groupby("name")["dur_ns"].sum().sort_values(ascending=False)
        share = 100.0 * per_name / max(int(per_name.sum()), 1)
        kept = per_name[share >= MIN_SHARE_PCT].head(TOP_ITEMS)
        top[str(phase)] = [
            {"name": str(name), "total_ns": int(ns), "pct_of_phase": float(share[name])}
            for name, ns in kept.items()
        ]
    forward = int(totals.get("forward", 0))
    backward = int(totals.get("backward", 0))
    evidence = {
        "phases": phases,
        "top": top,
        "forward_backward": {
            "forward_pct": pct(forward, forward + backward),
            "backward_pct": pct(backward, forward + backward),
        },
        "step_modes": _step_modes(job.steps),
    }
    times = job.steps["start_ns"].to_numpy() if len(job.steps) else np.zeros(1, dtype=np.int64)
    return result(
        rule,
        params,
        evaluated=len(job_scans(job, times, params.scan_interval_us)),
        trigger_count=0,
        violations=0,
        datapoints=len(frame),
        evidence=evidence,
        recommendation=_framework_advice(phases, top),
    )


def _step_modes(steps: pd.DataFrame) -> dict:
    """Time in TRAIN and EVAL steps and between steps ("others"), summed over ranks."""
    if len(steps) == 0:
        return {}
    ends = steps["start_ns"] + steps["dur_ns"]
    per_rank = steps.assign(end_ns=ends).groupby("rank")
    spans = int((per_rank["end_ns"].max() - per_rank["start_ns"].min()).sum())
    in_modes = steps.groupby("mode")["dur_ns"].sum()
    modes = {str(m): {"total_ns": int(ns), "pct": pct(ns, spans)} for m, ns in in_modes.items()}
    others = max(spans - int(in_modes.sum()), 0)
    modes["others"] = {"total_ns": others, "pct": pct(others, spans)}
    return modes


def _framework_advice(phases: dict, top: dict) -> str:
    if not phases:
        return "No framework events to summarise."
    annotated = [p for p in phases if p not in DEVICE_PHASES]
    phase = max(annotated or phases, key=lambda p: phases[p]["total_ns"])
    names = ", ".join(item["name"] for item in top.get(phase, [])[:3])
    # The phases' shares are of the annotations' own time, not of the steps: whether data
    # loading or communication takes too much is the trace rules' to say (``with_trace_figures``).
    advice = f"Most framework time is in {phase} ({phases[phase]['pct']:.0f}%)"
    return advice + (f"; the largest items there are {names}." if names else ".")


# What the framework summary states from the trace rules that measure it, rather than from its
# phase shares: (rule, figure of a rank, what it is).
MEASURED_BY = (
    ("DataLoading", "share_pct", "Data loading"),
    ("Communication", "comm_pct_of_steps", "Communication"),
)


def with_trace_figures(summary: RuleResult, recommendations: Iterable[RuleResult]) -> RuleResult:
    """The framework summary with what DataLoading and Communication measured, each in its
    rule's own figure and verdict, so that the summary never judges them otherwise."""
    if summary.not_evaluated_reason is not None:
        return summary
    judged = {r.rule: r for r in recommendations if r.not_evaluated_reason is None}
    statements = []
    for rule, key, label in MEASURED_BY:
        found = judged.get(rule)
        largest = largest_rank(found, key) if found else None
        if found is None or largest is None or not largest[1].get(key):
            continue  # none of it in the trace: nothing to state
        rank, figures = largest
        verdict = "an issue, see its advice" if found.triggered else "no issue"
        statements.append(
            f"{label} takes {figures[key]:.1f}% of the {figures['window']}"
            f"{of_ranks(found, rank)} ({rule}: {verdict})."
        )
    if not statements:
        return summary
    return replace(summary, recommendation=" ".join([summary.recommendation, *statements]))


OVERALL_SYSTEM_USAGE = RuleSpec(
    "OverallSystemUsage",
    OverallSystemUsageParams,
    evaluate_overall_system_usage,
    "Per node, percentiles of each system metric; a summary, it never triggers.",
)
OVERALL_FRAMEWORK_METRICS = RuleSpec(
    "OverallFrameworkMetrics",
    OverallFrameworkMetricsParams,
    evaluate_overall_framework_metrics,
    "Time split between forward, backward, optimizer, data loading, CPU operators and GPU "
    "kernels; a summary, it never triggers.",
)
