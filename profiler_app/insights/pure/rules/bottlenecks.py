"""CPUBottleneck and IOBottleneck: the GPU waits while the CPU is busy or waits for I/O.

Both count system snapshots (the samples of one node taken together) in which some GPU is
below ``gpu_threshold`` while some CPU core is above ``cpu_threshold`` (or the I/O wait is above
``io_threshold``). A scan triggers when it has seen more than ``patience`` snapshots that hold
both kinds of sample, and more than ``threshold`` percent of them were such bottlenecks.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from profiler_app.analysis.frames import (
    CPU_IOWAIT,
    CPU_UTIL,
    CPU_UTIL_TOTAL,
    GPU_UTIL,
    METRICS,
    JobData,
)
from profiler_app.insights.pure.rules.base import (
    DEFAULT_SCAN_INTERVAL_US,
    NO_ACTION,
    RuleParams,
    RuleResult,
    RuleSpec,
    TimeRange,
    job_scans,
    lacking,
    longest,
    node_rows,
    not_evaluated,
    pct,
    result,
    runs,
    seen_by,
    series_of,
    short_job_verdict,
)
from profiler_app.insights.pure.rules.snapshots import snapshot_ids


@dataclass(frozen=True)
class CPUBottleneckParams(RuleParams):
    threshold: float = 50
    gpu_threshold: float = 10
    cpu_threshold: float = 90
    patience: int = 100
    scan_interval_us: int = DEFAULT_SCAN_INTERVAL_US


@dataclass(frozen=True)
class IOBottleneckParams(RuleParams):
    threshold: float = 50
    gpu_threshold: float = 70
    io_threshold: float = 50
    patience: int = 1000
    scan_interval_us: int = DEFAULT_SCAN_INTERVAL_US


CPU_ADVICE = (
    "The GPUs wait for the CPU. Move data pre-processing off the training loop: use more "
    "DataLoader workers (num_workers), pin_memory and prefetching, do augmentation on the GPU "
    "(e.g. NVIDIA DALI), or pre-process the data set once ahead of training. Check which "
    "operators run on the CPU in the time ranges below."
)
IO_ADVICE = (
    "The GPUs wait for I/O. Read the data set from faster storage (local NVMe instead of a network "
    "file system), use larger files in a streaming format, and load ahead with more DataLoader "
    "workers and prefetching. Check what runs in the time ranges below."
)


def _starved_gpu(
    job: JobData,
    params: CPUBottleneckParams | IOBottleneckParams,
    rule: str,
    busy_metric: str,
    busy_threshold: float,
    busy_label: str,
    advice: str,
) -> RuleResult:
    if not job.has_metric(GPU_UTIL):
        return not_evaluated(rule, params, "no GPU utilisation samples")
    if not job.has_metric(busy_metric):
        return not_evaluated(rule, params, lacking(job, f"{busy_label} samples"))

    snaps = _Snapshots.of(job, busy_metric, params.gpu_threshold, busy_threshold)
    bottleneck = snaps.bottleneck
    evaluated, share_k, triggered = _scans(job, params, snaps.time, snaps.datapoint, bottleneck)
    datapoints = int(snaps.datapoint.sum())
    if not evaluated.any():
        return short_job_verdict(
            lambda j, p: _starved_gpu(j, p, rule, busy_metric, busy_threshold, busy_label, advice),
            job,
            params,
            datapoints,
            f"{datapoints} snapshots with both GPU and {busy_label} samples; the rule waits for "
            f"more than patience={params.patience}",
            patience=0,
        )
    evidence = {
        "datapoints": datapoints,
        "bottlenecks": int(bottleneck.sum()),
        "bottleneck_pct": pct(bottleneck.sum(), datapoints),
        "threshold_pct": params.threshold,
        "low_gpu_datapoints": int((snaps.datapoint & snaps.low_gpu).sum()),
        f"high_{busy_label.replace(' ', '_')}_datapoints": int(
            (snaps.datapoint & snaps.busy).sum()
        ),
        "nodes": snaps.per_node(job),
        "bottleneck_pct_per_scan": share_k[evaluated],
    }
    return result(
        rule,
        params,
        evaluated=int(evaluated.sum()),
        trigger_count=int(triggered.sum()),
        violations=int(bottleneck.sum()),
        datapoints=datapoints,
        evidence=evidence,
        time_ranges=longest(_bottleneck_ranges(job, snaps.node, snaps.time, bottleneck)),
        recommendation=advice if triggered.any() else NO_ACTION,
    )


@dataclass(frozen=True)
class _Snapshots:
    """The job's sampling snapshots (one per node and time), each with whether it held a GPU
    sample below the GPU threshold and a busy sample above its threshold."""

    time: np.ndarray
    node: np.ndarray
    datapoint: np.ndarray  # both a GPU and a busy sample
    low_gpu: np.ndarray
    busy: np.ndarray

    @cached_property
    def bottleneck(self) -> np.ndarray:
        return self.datapoint & self.low_gpu & self.busy

    def per_node(self, job: JobData) -> dict[str, dict[str, int]]:
        return {
            job.samples.nodes[node]: {
                "datapoints": int(self.datapoint[self.node == node].sum()),
                "bottlenecks": int(self.bottleneck[self.node == node].sum()),
            }
            for node in np.unique(self.node)
        }

    @classmethod
    def of(
        cls, job: JobData, busy_metric: str, gpu_threshold: float, busy_threshold: float
    ) -> _Snapshots:
        rows = node_rows(job, GPU_UTIL, busy_metric)
        nodes, times, values = rows["node"], rows["time_ns"], rows["value"]
        is_gpu = rows["metric"] == METRICS.index(GPU_UTIL)
        snap = snapshot_ids(nodes, times, series_of(rows))
        n_snap = int(snap[-1]) + 1

        def any_per_snapshot(flags: np.ndarray) -> np.ndarray:
            return np.bincount(snap, weights=flags, minlength=n_snap) > 0

        first = np.flatnonzero(np.diff(snap, prepend=-1))
        return cls(
            time=times[first],
            node=nodes[first],
            datapoint=any_per_snapshot(is_gpu) & any_per_snapshot(~is_gpu),
            low_gpu=any_per_snapshot(is_gpu & (values < gpu_threshold)),
            busy=any_per_snapshot(~is_gpu & (values > busy_threshold)),
        )


def _scans(
    job: JobData,
    params: CPUBottleneckParams | IOBottleneckParams,
    snap_time: np.ndarray,
    datapoint: np.ndarray,
    bottleneck: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per scan (as SageMaker's rule scans while the job runs): whether it was evaluated, the
    bottleneck share of the snapshots seen so far, and whether it triggered."""
    # Snapshot times are sorted within a node only; the scans need them globally sorted.
    order = np.argsort(snap_time, kind="stable")
    boundaries = job_scans(job, snap_time, params.scan_interval_us)
    seen_points = np.cumsum(datapoint[order])
    seen_bottlenecks = np.cumsum(bottleneck[order])
    seen = seen_by(snap_time[order], boundaries)
    points_k = np.where(seen > 0, seen_points[np.maximum(seen - 1, 0)], 0)
    bottlenecks_k = np.where(seen > 0, seen_bottlenecks[np.maximum(seen - 1, 0)], 0)
    evaluated = points_k > params.patience
    share_k = 100.0 * bottlenecks_k / np.maximum(points_k, 1)
    return evaluated, share_k, evaluated & (share_k > params.threshold)


def _bottleneck_ranges(
    job: JobData, snap_node: np.ndarray, snap_time: np.ndarray, bottleneck: np.ndarray
) -> list[TimeRange]:
    """Runs of consecutive bottleneck snapshots of a node, each up to the next snapshot."""
    ranges = []
    for node in np.unique(snap_node):
        mine = snap_node == node
        times, flags = snap_time[mine], bottleneck[mine]
        gaps = np.diff(times)
        typical_gap = int(np.median(gaps)) if len(gaps) else 0
        ends = np.append(times[1:], times[-1] + typical_gap)
        for first, last in zip(*runs(flags), strict=True):
            name = job.samples.nodes[node]
            ranges.append(TimeRange(int(times[first]), int(ends[last]), name, -1))
    return ranges


def evaluate_cpu_bottleneck(job: JobData, params: CPUBottleneckParams) -> RuleResult:
    # Per-core samples show a single saturated core (the Python main thread); fall back to the
    # node total when the collector recorded only that.
    metric = CPU_UTIL if job.has_metric(CPU_UTIL) else CPU_UTIL_TOTAL
    return _starved_gpu(
        job, params, "CPUBottleneck", metric, params.cpu_threshold, "CPU utilisation", CPU_ADVICE
    )


def evaluate_io_bottleneck(job: JobData, params: IOBottleneckParams) -> RuleResult:
    return _starved_gpu(
        job, params, "IOBottleneck", CPU_IOWAIT, params.io_threshold, "I/O wait", IO_ADVICE
    )


CPU_BOTTLENECK = RuleSpec(
    "CPUBottleneck",
    CPUBottleneckParams,
    evaluate_cpu_bottleneck,
    "GPU under-used (below gpu_threshold) while a CPU core is busy (above cpu_threshold) for "
    "more than threshold percent of the time.",
)
IO_BOTTLENECK = RuleSpec(
    "IOBottleneck",
    IOBottleneckParams,
    evaluate_io_bottleneck,
    "GPU under-used (below gpu_threshold) while I/O wait is high (above io_threshold) for more "
    "than threshold percent of the time.",
)
