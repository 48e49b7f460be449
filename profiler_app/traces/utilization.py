"""Utilisation time series: GPU busy time derived from kernels, and down-sampled samples.

NVML defines GPU utilisation as the share of a period during which at least one kernel ran, so
the derived series is the union of kernel intervals (all streams of a device) per bucket, not
the sum of durations. Buckets start at a fine resolution and coarsen by 10x whenever a device has
too many, so memory stays bounded for traces of any length.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from profiler_app.traces.arrays import run_starts

MAX_POINTS = 2000
BASE_BUCKET_NS = 1_000_000  # 1 ms
MAX_BUCKETS = 1 << 16


def merge_intervals(start_ns: np.ndarray, end_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of [start, end) intervals, as sorted disjoint intervals."""
    if len(start_ns) == 0:
        return start_ns, end_ns
    order = np.argsort(start_ns, kind="stable")
    starts, ends = start_ns[order], end_ns[order]
    reach = np.maximum.accumulate(ends)
    # A new merged interval begins where a start lies beyond everything seen so far.
    new = np.ones(len(starts), dtype=bool)
    new[1:] = starts[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, len(starts) - 1]
    return starts[first], reach[last]


def busy_per_bucket(
    start_ns: np.ndarray, end_ns: np.ndarray, width_ns: int
) -> tuple[np.ndarray, np.ndarray]:
    """(bucket index, busy ns) for disjoint intervals, split at bucket boundaries."""
    if len(start_ns) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    first = start_ns // width_ns
    last = (end_ns - 1) // width_ns
    spans = np.maximum(last - first + 1, 1)
    bucket = np.repeat(first, spans) + (
        np.arange(spans.sum()) - np.repeat(np.cumsum(spans) - spans, spans)
    )
    lo = np.maximum(np.repeat(start_ns, spans), bucket * width_ns)
    hi = np.minimum(np.repeat(end_ns, spans), (bucket + 1) * width_ns)
    busy = np.maximum(hi - lo, 0)
    if len(bucket) and (bucket[1:] >= bucket[:-1]).all():
        # Sorted intervals (as merged ones are) give sorted buckets: summed run by run, with
        # no sort.
        first = run_starts(bucket)
        return bucket[first], np.add.reduceat(busy, first)
    return _sum_by(bucket, busy)


def _sum_by(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniq, inverse = np.unique(keys, return_inverse=True)
    sums = np.zeros(len(uniq), dtype=np.int64)
    np.add.at(sums, inverse.reshape(-1), values)
    return uniq, sums


@dataclass
class DeviceBusy:
    """Busy ns per bucket for one device, at a resolution that coarsens as needed."""

    width_ns: int = BASE_BUCKET_NS
    buckets: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    busy_ns: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    def add(self, start_ns: np.ndarray, end_ns: np.ndarray) -> None:
        merged_start, merged_end = merge_intervals(start_ns, end_ns)
        idx, busy = busy_per_bucket(merged_start, merged_end, self.width_ns)
        self.buckets, self.busy_ns = _sum_by(
            np.concatenate([self.buckets, idx]), np.concatenate([self.busy_ns, busy])
        )
        while len(self.buckets) > MAX_BUCKETS:
            self.width_ns *= 10
            self.buckets, self.busy_ns = _sum_by(self.buckets // 10, self.busy_ns)

    def series(self, span_start_ns: int, span_end_ns: int) -> tuple[np.ndarray, np.ndarray]:
        """(bucket start ns, utilisation %) over the whole span, idle buckets included.

        Intervals of different batches may overlap (the union is taken per batch), so a bucket
        is capped at 100%.
        """
        width = self.width_ns
        while (span_end_ns - span_start_ns) // width > MAX_POINTS:
            width *= 10
        factor = width // self.width_ns
        first = span_start_ns // width
        count = max(int((span_end_ns - 1) // width - first + 1), 1)
        busy = np.zeros(count, dtype=np.int64)
        if len(self.buckets):
            coarse = self.buckets // factor - first
            keep = (coarse >= 0) & (coarse < count)
            np.add.at(busy, coarse[keep], self.busy_ns[keep])
        times = (first + np.arange(count)) * width
        return times, np.minimum(busy * 100.0 / width, 100.0)


def downsample(times_ns: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At most MAX_POINTS points: the mean of each of MAX_POINTS equal time buckets."""
    if len(times_ns) <= MAX_POINTS:
        order = np.argsort(times_ns, kind="stable")
        return times_ns[order], values[order]
    lo, hi = int(times_ns.min()), int(times_ns.max())
    width = max((hi - lo) // MAX_POINTS + 1, 1)
    frame = pd.DataFrame({"bucket": (times_ns - lo) // width, "value": values})
    means = frame.groupby("bucket", sort=True)["value"].mean()
    return lo + means.index.to_numpy(dtype=np.int64) * width, means.to_numpy(dtype=np.float64)
