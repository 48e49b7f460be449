"""BatchSize and LowGPUUtilization: percentiles of utilisation over a trailing window."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from profiler_app.analysis.frames import (
    CPU_UTIL,
    CPU_UTIL_TOTAL,
    GPU_MEM_USED_PCT,
    GPU_UTIL,
    JobData,
)
from profiler_app.insights.pure.rules.base import (
    DEFAULT_SCAN_INTERVAL_US,
    NO_ACTION,
    RuleParams,
    RuleResult,
    RuleSpec,
    TimeRange,
    gpu_patience,
    gpu_source_label,
    job_scans,
    lacking,
    longest,
    merge_ranges,
    node_rows,
    not_evaluated,
    per_series,
    percentiles,
    result,
    runs,
    seen_by,
    series_of,
    short_job_verdict,
    trailing_quantiles,
)
from profiler_app.insights.pure.rules.snapshots import snapshot_ids


@dataclass(frozen=True)
class BatchSizeParams(RuleParams):
    cpu_threshold_p95: float = 70
    gpu_threshold_p95: float = 70
    gpu_memory_threshold_p95: float = 70
    patience: int = 100
    window: int = 500
    scan_interval_us: int = DEFAULT_SCAN_INTERVAL_US


@dataclass(frozen=True)
class LowGPUUtilizationParams(RuleParams):
    threshold_p95: float = 70
    threshold_p5: float = 10
    patience: int = 1000
    window: int = 500
    scan_interval_us: int = DEFAULT_SCAN_INTERVAL_US


BATCH_ADVICE = (
    "CPU, GPU and GPU memory are all lightly used: the batch is probably too small for this "
    "instance. Increase the batch size (scaling the learning rate with it) or train on a "
    "smaller, cheaper instance type. A larger batch needs more pre-processing per step: watch "
    "the CPUBottleneck rule after the change."
)
UNDERUSED_ADVICE = (
    "Some GPUs are under-used (95th percentile below threshold_p95): increase the batch size, "
    "check the CPUBottleneck and IOBottleneck rules for what starves them, or use an instance "
    "with fewer or smaller GPUs."
)
FLUCTUATING_ADVICE = (
    "Some GPUs alternate between busy and idle (95th percentile high, 5th percentile low): "
    "look for synchronisation points and data-loading waits between steps in the time ranges "
    "below; prefetch batches and overlap data transfer with computation."
)


def _window_ranges(
    times: np.ndarray, seen: np.ndarray, window: int, flagged: np.ndarray, node: str, gpu: int
) -> list[TimeRange]:
    """One range per run of consecutive flagged scans: from the first sample of the first
    scan's window to the last sample of the last scan."""
    return [
        TimeRange(int(times[max(seen[a] - window, 0)]), int(times[seen[b] - 1]), node, gpu)
        for a, b in zip(*runs(flagged), strict=True)
    ]


def node_cpu_series(job: JobData) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """node -> (snapshot times, CPU utilisation averaged over the node's cores)."""
    metric = CPU_UTIL if job.has_metric(CPU_UTIL) else CPU_UTIL_TOTAL
    rows = node_rows(job, metric)
    nodes, times = rows["node"], rows["time_ns"]
    snap = snapshot_ids(nodes, times, series_of(rows))
    n_snap = int(snap[-1]) + 1 if len(snap) else 0
    mean = np.bincount(snap, weights=rows["value"], minlength=n_snap) / np.bincount(
        snap, minlength=n_snap
    )
    first = np.flatnonzero(np.diff(snap, prepend=-1))
    snap_node, snap_time = nodes[first], times[first]
    return {
        job.samples.nodes[node]: (snap_time[snap_node == node], mean[snap_node == node])
        for node in np.unique(snap_node)
    }


def evaluate_batch_size(job: JobData, params: BatchSizeParams) -> RuleResult:
    rule = "BatchSize"
    if not job.has_metric(GPU_UTIL):
        return not_evaluated(rule, params, "no GPU utilisation samples")
    if not job.has_metric(GPU_MEM_USED_PCT):
        return not_evaluated(rule, params, lacking(job, "samples of the GPU memory in use"))
    if not (job.has_metric(CPU_UTIL) or job.has_metric(CPU_UTIL_TOTAL)):
        return not_evaluated(rule, params, lacking(job, "CPU utilisation samples"))
    boundaries = job_scans(job, job.samples.time_ns, params.scan_interval_us)
    cpu = node_cpu_series(job)
    util = {key: (t, v) for key, t, v in per_series(job, GPU_UTIL)}
    memory = {key: (t, v) for key, t, v in per_series(job, GPU_MEM_USED_PCT)}
    evaluated = np.zeros(len(boundaries), dtype=bool)
    triggered = np.zeros(len(boundaries), dtype=bool)
    violations = 0
    ranges: list[TimeRange] = []
    evidence: dict = {"nodes": {}}
    w = params.window
    for node, (cpu_times, cpu_values) in cpu.items():
        seen_cpu = seen_by(cpu_times, boundaries)
        cpu_ready = (seen_cpu > w) & (seen_cpu > params.patience)
        cpu_p95 = trailing_quantiles(cpu_values, seen_cpu, w, (0.95,))[0]
        node_evidence: dict = {"cpu": percentiles(cpu_values), "gpus": {}}
        for (gpu_node, gpu), (times, values) in util.items():
            if gpu_node != node or (node, gpu) not in memory:
                continue
            ready, low, gpu_evidence = _small_batch_scans(
                params, boundaries, (cpu_ready, cpu_p95), (times, values), memory[(node, gpu)]
            )
            evaluated |= ready
            triggered |= low
            violations += int(low.sum())
            ranges += _window_ranges(times, seen_by(times, boundaries), w, low, node, gpu)
            node_evidence["gpus"][str(gpu)] = gpu_evidence
        evidence["nodes"][node] = node_evidence
    if not evaluated.any():
        fewest = min(len(t) for _, (t, _) in [*cpu.items(), *util.items(), *memory.items()])
        return short_job_verdict(
            evaluate_batch_size,
            job,
            params,
            fewest,
            f"at most {max(len(t) for t, _ in cpu.values())} CPU snapshots per node; the rule "
            f"needs more than window={w} and patience={params.patience}",
            patience=0,
            window=max(min(w, fewest - 1), 1),
        )
    return result(
        rule,
        params,
        evaluated=int(evaluated.sum()),
        trigger_count=int(triggered.sum()),
        violations=violations,
        datapoints=sum(len(t) for t, _ in cpu.values()),
        evidence=evidence,
        time_ranges=longest(merge_ranges(ranges)),
        recommendation=BATCH_ADVICE if triggered.any() else NO_ACTION,
    )


def evaluate_low_gpu_utilization(job: JobData, params: LowGPUUtilizationParams) -> RuleResult:
    rule = "LowGPUUtilization"
    if not job.has_metric(GPU_UTIL):
        return not_evaluated(rule, params, "no GPU utilisation samples")
    boundaries = job_scans(job, job.samples.time_ns, params.scan_interval_us)
    evaluated = np.zeros(len(boundaries), dtype=bool)
    triggered = np.zeros(len(boundaries), dtype=bool)
    violations = 0
    kinds: set[str] = set()
    ranges: list[TimeRange] = []
    gpus: dict = {}
    w = params.window
    datapoints = 0
    patience = gpu_patience(job, params.patience)
    for (node, gpu), times, values in per_series(job, GPU_UTIL):
        datapoints = max(datapoints, len(values))
        seen = seen_by(times, boundaries)
        ready, under, fluctuating, gpu_evidence = _utilisation_scans(params, seen, patience, values)
        bad = under | fluctuating
        evaluated |= ready
        triggered |= bad
        violations += int(bad.sum())
        kinds |= {"under-used"} if under.any() else set()
        kinds |= {"fluctuating"} if fluctuating.any() else set()
        ranges += _window_ranges(times, seen, w, bad, node, gpu)
        gpus.setdefault(node, {})[str(gpu)] = gpu_evidence

    if not evaluated.any():
        return short_job_verdict(
            evaluate_low_gpu_utilization,
            job,
            params,
            datapoints,
            f"at most {datapoints} GPU utilisation samples per GPU; the rule waits for more "
            f"than patience={patience}",
            patience=0,
        )
    advice = " ".join(
        text
        for kind, text in (("under-used", UNDERUSED_ADVICE), ("fluctuating", FLUCTUATING_ADVICE))
        if kind in kinds
    )
    return result(
        rule,
        params,
        evaluated=int(evaluated.sum()),
        trigger_count=int(triggered.sum()),
        violations=violations,
        datapoints=datapoints,
        evidence={"source": gpu_source_label(job), "issues": sorted(kinds), "nodes": gpus},
        time_ranges=longest(merge_ranges(ranges)),
        recommendation=advice or NO_ACTION,
    )


def _small_batch_scans(
    params: BatchSizeParams,
    boundaries: np.ndarray,
    cpu: tuple[np.ndarray, np.ndarray],
    util: tuple[np.ndarray, np.ndarray],
    memory: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """One GPU's scans: which were evaluated (``cpu``: its node's readiness and CPU p95 per
    scan), in which all three p95s were low, and its evidence."""
    w = params.window
    cpu_ready, cpu_p95 = cpu
    (times, values), (mem_times, mem_values) = util, memory
    seen = seen_by(times, boundaries)
    seen_mem = seen_by(mem_times, boundaries)
    ready = cpu_ready & (seen > w) & (seen_mem > w)
    gpu_p95 = trailing_quantiles(values, seen, w, (0.95,))[0]
    mem_p95 = trailing_quantiles(mem_values, seen_mem, w, (0.95,))[0]
    low = (
        ready
        & (cpu_p95 < params.cpu_threshold_p95)
        & (gpu_p95 < params.gpu_threshold_p95)
        & (mem_p95 < params.gpu_memory_threshold_p95)
    )
    last = np.flatnonzero(ready)[-1] if ready.any() else None
    evidence = {
        "violations": int(low.sum()),
        "util": percentiles(values),
        "memory": percentiles(mem_values),
        "window_p95_util": None if last is None else gpu_p95[last],
        "window_p95_memory": None if last is None else mem_p95[last],
        "window_p95_cpu": None if last is None else cpu_p95[last],
    }
    return ready, low, evidence


def _utilisation_scans(
    params: LowGPUUtilizationParams, seen: np.ndarray, patience: int, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """One GPU's scans: which were evaluated, under-used, fluctuating, and its evidence."""
    ready = (seen > patience) & (seen > 0)
    p5, p95 = trailing_quantiles(values, seen, params.window, (0.05, 0.95))
    under = ready & (p95 < params.threshold_p95)
    fluctuating = ready & ~under & (p95 > params.threshold_p95) & (p5 < params.threshold_p5)
    last = np.flatnonzero(ready)[-1] if ready.any() else None
    evidence = {
        "under_used_scans": int(under.sum()),
        "fluctuating_scans": int(fluctuating.sum()),
        "unused": bool(values.max() == 0),
        "window_p95": None if last is None else p95[last],
        "window_p5": None if last is None else p5[last],
        **percentiles(values),
    }
    return ready, under, fluctuating, evidence


BATCH_SIZE = RuleSpec(
    "BatchSize",
    BatchSizeParams,
    evaluate_batch_size,
    "GPU under-used because of small batches: the 95th percentiles of CPU, GPU and GPU memory "
    "utilisation over the last window samples are all below their thresholds.",
)
LOW_GPU_UTILIZATION = RuleSpec(
    "LowGPUUtilization",
    LowGPUUtilizationParams,
    evaluate_low_gpu_utilization,
    "Per GPU: 95th percentile below threshold_p95 (under-used), or above it while the 5th "
    "percentile is below threshold_p5 (fluctuating).",
)
