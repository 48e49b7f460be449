"""Sampled counter series (NVML, psutil, perf counters, Kineto counters) on the timeline.

A series is a node's samples of one metric and device (or counter name). Drawn per bucket it
gives min, max and mean of the samples in the bucket; a bucket between two samples holds the
earlier sample's value, so zooming in past the sampling interval draws steps, not gaps. A
metric sampled at a steady pace (``PACED_METRICS``) holds only a few sampling intervals: where
nothing was sampled for longer (between two rounds of a job, a paused process) it draws a gap.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from profiler_app.traces.aggregate import SAMPLE_SOURCES
from profiler_app.traces.arrays import run_starts, unique_sorted
from tracefmt.kinds import SAMPLE_KIND_NAMES

# metric → (label, unit); metrics not listed are not drawn.
CPU_METRICS = {
    "cpu_util_total_pct": ("CPU utilisation", "%"),
    "cpu_iowait_pct": ("I/O wait", "%"),
    "host_mem_used_bytes": ("Host memory used", "B"),
}
GPU_METRICS = {
    "gpu_util_pct": ("utilisation", "%"),
    "gpu_mem_used_bytes": ("memory used", "B"),
    "gpu_mem_util_pct": ("memory utilisation", "%"),
    # From the trace's [memory] events (profile_memory=True): the memory view's curves.
    "torch_allocated_bytes": ("memory allocated (PyTorch)", "B"),
    "torch_reserved_bytes": ("memory reserved (PyTorch)", "B"),
}
# One series per process (named "rank <n>"): several ranks of a node each have their own.
PROCESS_METRICS = {
    "torch_cpu_allocated_bytes": ("CPU memory allocated (PyTorch)", "B"),
}
COUNTER_METRIC = "counter"
PER_CORE_METRIC = "cpu_util_pct"
# Sampled by the collector's NVML and psutil every sampling interval, where the other metrics
# record each change (a memory curve, a trace's counter events) and hold until the next.
PACED_METRICS = frozenset(
    SAMPLE_KIND_NAMES[kind]
    for kind, source in SAMPLE_SOURCES.items()
    if source in ("nvml", "psutil")
)
# A paced sample holds for at most this many typical (median) sampling intervals.
HOLD_INTERVALS = 3


@dataclass(frozen=True)
class Series:
    node: str
    metric: str
    device: int
    name: str
    time_ns: np.ndarray  # ascending
    value: np.ndarray

    @cached_property
    def hold_ns(self) -> float:
        """How long after a sample its value still stands: until the next one, or for a paced
        metric a few sampling intervals at most."""
        if self.metric not in PACED_METRICS or len(self.time_ns) < 3:
            return np.inf
        return HOLD_INTERVALS * float(np.median(np.diff(self.time_ns)))


def from_frame(frame: pd.DataFrame) -> list[Series]:
    """Series from rows of (node, metric, device, name, time_ns, value), as ingest stores them."""
    out = []
    for (node, metric, device, name), group in frame.groupby(["node", "metric", "device", "name"]):
        group = group.sort_values("time_ns", kind="stable")
        out.append(
            Series(
                str(node),
                str(metric),
                int(device),
                str(name),
                group["time_ns"].to_numpy(np.int64),
                group["value"].to_numpy(np.float64),
            )
        )
    return out


def combine(pieces: list[Series]) -> Series:
    """One series from the pieces several parts (collector chunks) recorded."""
    time = np.concatenate([p.time_ns for p in pieces])
    value = np.concatenate([p.value for p in pieces])
    order = np.argsort(time, kind="stable")
    first = pieces[0]
    return Series(first.node, first.metric, first.device, first.name, time[order], value[order])


def mean_of(series: list[Series], name: str = "") -> Series:
    """Per-core series averaged at each sampling instant (CPU utilisation when no total was
    recorded)."""
    time = unique_sorted(np.concatenate([s.time_ns for s in series]))
    stacked = np.full((len(series), len(time)), np.nan)
    for i, s in enumerate(series):
        stacked[i, np.searchsorted(time, s.time_ns)] = s.value
    first = series[0]
    return Series(first.node, first.metric, -1, name, time, np.nanmean(stacked, axis=0))


def per_bucket(
    series: Series, start_ns: int, k: int, n_buckets: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, min, max) per bucket; NaN outside the series' first..last sample."""
    mean = np.full(n_buckets, np.nan)
    low = np.full(n_buckets, np.nan)
    high = np.full(n_buckets, np.nan)
    t, v = series.time_ns, series.value
    if not len(t):
        return mean, low, high
    edges = start_ns + (np.arange(n_buckets + 1, dtype=np.int64) << k)
    lo, hi = np.searchsorted(t, [edges[0], edges[-1]])
    bucket = (t[lo:hi] - start_ns) >> k
    values = v[lo:hi]
    if len(bucket):
        first = run_starts(bucket)
        where = bucket[first]
        mean[where] = np.add.reduceat(values, first) / np.diff(np.r_[first, len(values)])
        low[where] = np.minimum.reduceat(values, first)
        high[where] = np.maximum.reduceat(values, first)
    # Buckets without a sample hold the last value before them, within the series' span.
    previous = np.searchsorted(t, edges[:-1], side="right") - 1
    empty = np.isnan(mean) & (previous >= 0) & (edges[:-1] <= t[-1])
    empty &= edges[:-1] - t[np.maximum(previous, 0)] <= series.hold_ns
    held = v[previous[empty]]
    mean[empty], low[empty], high[empty] = held, held, held
    return mean, low, high
