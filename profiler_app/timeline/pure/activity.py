"""Activity pyramids: per bucket of ``2**k`` ns, how many events start and how much time is
covered. A collapsed group draws this for every lane below it, and the GPU utilisation counters
draw the covered time of the kernels' merged intervals.

Levels are kept from the coarsest down while they stay at least ``MIN_RATIO`` times smaller
than the events they summarise (finer windows than the finest kept level hold few enough events
to be summed directly); the finest is summarised from the events, the coarser ones from it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from profiler_app.traces.arrays import run_starts, unique_sorted
from profiler_app.traces.utilization import busy_per_bucket

MAX_K = 48  # 2**48 ns is 78 hours: coarser buckets would all be one
MIN_RATIO = 4


@dataclass(frozen=True)
class ActivityLevel:
    k: int
    bucket: np.ndarray  # start_ns >> k, ascending
    count: np.ndarray  # events starting in the bucket
    busy_ns: np.ndarray  # time the intervals cover in the bucket


def _merge(keys_a, count, keys_b, busy) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Align (bucket, count) and (bucket, busy) on the union of their buckets."""
    bucket = unique_sorted(np.concatenate([keys_a, keys_b]))
    out_count = np.zeros(len(bucket), dtype=np.int64)
    out_busy = np.zeros(len(bucket), dtype=np.int64)
    out_count[np.searchsorted(bucket, keys_a)] = count
    out_busy[np.searchsorted(bucket, keys_b)] = busy
    return bucket, out_count, out_busy


def summarise(
    starts: np.ndarray, first: np.ndarray, k: int, span_start: np.ndarray, span_end: np.ndarray
) -> ActivityLevel:
    """Level ``k`` of events starting at ``starts`` (sorted; its buckets begin at ``first``,
    ``bucket_firsts``) covering the disjoint intervals [span_start, span_end) (sorted)."""
    count = np.diff(np.r_[first, len(starts)])
    covered, busy = busy_per_bucket(span_start, span_end, 1 << k)
    return ActivityLevel(k, *_merge(starts[first] >> k, count, covered, busy))


# Events whose buckets are compared at once: the whole part's pyramid is built over all its
# events, and a bucket number for each of them was a column of the part's size per level.
_FIRSTS_AT_ONCE = 1 << 20


def bucket_firsts(starts: np.ndarray, k: int) -> np.ndarray:
    """Where each bucket of ``2**k`` ns begins among ``starts`` (sorted): the positions whose
    bucket is not the previous event's, the first included."""
    if not len(starts):
        return np.empty(0, np.int64)
    parts = [np.zeros(1, np.int64)]
    for lo in range(1, len(starts), _FIRSTS_AT_ONCE):
        shifted = starts[lo - 1 : lo + _FIRSTS_AT_ONCE] >> k
        parts.append(np.flatnonzero(shifted[1:] != shifted[:-1]) + lo)
    return np.concatenate(parts)


def _entries(first: np.ndarray, span_start, span_end, k: int) -> int:
    """An upper bound of a level's size, without building it (``first``: where its buckets
    of events begin)."""
    first_span, last_span = span_start >> k, np.maximum(span_end - 1, span_start) >> k
    # Disjoint sorted spans: a span's buckets up to the previous span's last are counted once.
    new_first = np.maximum(first_span, np.r_[np.iinfo(np.int64).min, last_span[:-1] + 1])
    covered = int(np.maximum(last_span - new_first + 1, 0).sum())
    return covered + max(len(first), 1)


def build_activity(
    starts: np.ndarray, span_start: np.ndarray, span_end: np.ndarray
) -> list[ActivityLevel]:
    """The kept levels, coarsest first; ``starts`` and the spans sorted by start."""
    n = max(len(starts), len(span_start))
    finest = MAX_K  # the coarsest level is always kept
    for k in range(MAX_K - 1, -1, -1):
        if _entries(bucket_firsts(starts, k), span_start, span_end, k) * MIN_RATIO > n:
            break
        finest = k
    # The finest level from the events and spans; each coarser one sums its buckets in pairs
    # (a bucket's count and covered time are its halves'), where building each level from the
    # spans again took most of the index's time.
    levels = [summarise(starts, bucket_firsts(starts, finest), finest, span_start, span_end)]
    while levels[-1].k < MAX_K:
        levels.append(_coarser(levels[-1]))
    return levels[::-1]


def _coarser(level: ActivityLevel) -> ActivityLevel:
    if not len(level.bucket):
        return ActivityLevel(level.k + 1, level.bucket, level.count, level.busy_ns)
    bucket = level.bucket >> 1
    first = run_starts(bucket)
    return ActivityLevel(
        level.k + 1,
        bucket[first],
        np.add.reduceat(level.count, first),
        np.add.reduceat(level.busy_ns, first),
    )


def window_sums(
    level: ActivityLevel, first_bucket: int, n_buckets: int
) -> tuple[np.ndarray, np.ndarray]:
    """(count, busy) per bucket of a window from a stored level."""
    lo, hi = np.searchsorted(level.bucket, [first_bucket, first_bucket + n_buckets])
    count = np.zeros(n_buckets, dtype=np.int64)
    busy = np.zeros(n_buckets, dtype=np.int64)
    at = level.bucket[lo:hi] - first_bucket
    count[at] = level.count[lo:hi]
    busy[at] = level.busy_ns[lo:hi]
    return count, busy


def covered_per_bucket(
    span_start: np.ndarray, span_end: np.ndarray, k: int, first_bucket: int, n_buckets: int
) -> np.ndarray:
    """Time the disjoint intervals (inside the window) cover in each bucket, in one pass."""
    keep = span_end > span_start
    s, e = span_start[keep], span_end[keep]
    b0 = (s >> k) - first_bucket
    b1 = ((e - 1) >> k) - first_bucket
    width = 1 << k
    same = b0 == b1
    busy = np.zeros(n_buckets, dtype=np.float64)  # bincount weights are float64: exact below 2**53
    busy += np.bincount(b0[same], weights=e[same] - s[same], minlength=n_buckets)
    s, e, b0, b1 = s[~same], e[~same], b0[~same], b1[~same]
    busy += np.bincount(b0, weights=((b0 + first_bucket + 1) << k) - s, minlength=n_buckets)
    busy += np.bincount(b1, weights=e - ((b1 + first_bucket) << k), minlength=n_buckets)
    # Buckets strictly between an interval's first and last are wholly covered.
    inner = np.bincount(b0 + 1, minlength=n_buckets + 1) - np.bincount(b1, minlength=n_buckets + 1)
    busy += np.cumsum(inner)[:n_buckets] * width
    return busy.astype(np.int64)


def direct_sums(
    starts: np.ndarray,
    span_start: np.ndarray,
    span_end: np.ndarray,
    k: int,
    first_bucket: int,
    n_buckets: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The same from the events themselves, for windows finer than every stored level; the
    arguments need only cover the window."""
    at = (starts >> k) - first_bucket
    at = at[(at >= 0) & (at < n_buckets)]
    count = np.bincount(at, minlength=n_buckets).astype(np.int64)
    window_start, window_end = first_bucket << k, (first_bucket + n_buckets) << k
    s = np.clip(span_start, window_start, window_end)
    e = np.clip(span_end, window_start, window_end)
    return count, covered_per_bucket(s, e, k, first_bucket, n_buckets)
