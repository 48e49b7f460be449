"""The index's per-row summary levels and busy time per bucket, against the definitions
counted event by event: level ``k`` holds, per bucket of ``2**k`` ns, the count, summed
duration and longest name of the row's events of duration class ``<= k`` (of equally long
ones, the one that starts last); the busy time of a bucket is the time the intervals cover in
it."""

from __future__ import annotations

import numpy as np
import pytest

from profiler_app.timeline.pure.activity import bucket_firsts, build_activity, summarise
from profiler_app.timeline.pure.levels import build_levels, duration_class
from profiler_app.traces.utilization import busy_per_bucket, merge_intervals


def row(seed: int, n: int, span_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A row in start order: durations from many classes, with equal durations and equal
    starts (ties) common."""
    rng = np.random.default_rng(seed)
    start = np.sort(rng.integers(0, span_ns, n)).astype(np.int64)
    dur = rng.choice([0, 1, 3, 5, 100, 1000, 1000, 4096, 50_000, 300_000], n).astype(np.int64)
    name = rng.integers(0, 50, n).astype(np.int32)
    return start, dur, name


def level_by_hand(start, dur, name, k: int) -> dict[int, tuple[int, int, int]]:
    """bucket → (count, summed duration, name of the longest; of equals the last to start)."""
    out: dict[int, tuple[int, int, int]] = {}
    best: dict[int, int] = {}
    classes = duration_class(dur).tolist()
    for i in range(len(start)):
        if classes[i] > k:
            continue
        bucket = int(start[i]) >> k
        count, busy, _ = out.get(bucket, (0, 0, -1))
        if bucket not in best or dur[i] >= dur[best[bucket]]:
            best[bucket] = i  # start order: a later one of equal length replaces it
        out[bucket] = (count + 1, busy + int(dur[i]), int(name[best[bucket]]))
    return out


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("span_ns", [1 << 10, 1 << 20])  # fine levels kept, or coarse only
def test_each_level_is_its_events_counted_one_by_one(seed, span_ns):
    start, dur, name = row(seed, 3000, span_ns)
    levels = list(build_levels(start, dur, name))
    assert len(levels) >= 8
    for level in levels:
        expected = level_by_hand(start, dur, name, level.k)
        assert level.bucket.tolist() == sorted(expected)
        found = zip(level.count.tolist(), level.busy_ns.tolist(), level.name.tolist(), strict=True)
        assert list(found) == [expected[b] for b in sorted(expected)]


@pytest.mark.parametrize("seed", range(4))
def test_each_activity_level_is_the_one_summarised_from_the_events_at_its_width(seed):
    """The finest kept level is summarised from the events and spans; each coarser one is
    summed from it two buckets at a time, and equals the level summarised at its own width."""
    rng = np.random.default_rng(seed)
    span_ns = [1 << 12, 1 << 16, 1 << 24, 1 << 40][seed]
    starts = np.sort(rng.integers(0, span_ns, 5000)).astype(np.int64)
    ends = starts + rng.choice([0, 1, 70, 900, 5000, 1 << 20], len(starts))
    span_start, span_end = merge_intervals(starts, ends)
    levels = build_activity(starts, span_start, span_end)
    assert [lv.k for lv in levels] == list(range(levels[0].k, levels[-1].k - 1, -1))
    assert len(levels) >= 8
    for level in levels:
        at_width = summarise(starts, bucket_firsts(starts, level.k), level.k, span_start, span_end)
        for got, expected in zip(
            (level.bucket, level.count, level.busy_ns),
            (at_width.bucket, at_width.count, at_width.busy_ns),
            strict=True,
        ):
            assert got.dtype == expected.dtype and np.array_equal(got, expected)


def test_no_events_keep_one_empty_level():
    empty = np.empty(0, np.int64)
    [level] = build_activity(empty, empty, empty)
    assert len(level.bucket) == len(level.count) == len(level.busy_ns) == 0


def busy_by_hand(start, end, width: int) -> dict[int, int]:
    out: dict[int, int] = {}
    for s, e in zip(start.tolist(), end.tolist(), strict=True):
        for bucket in range(s // width, max(e - 1, s) // width + 1):
            covered = min(e, (bucket + 1) * width) - max(s, bucket * width)
            out[bucket] = out.get(bucket, 0) + max(covered, 0)
    return out


@pytest.mark.parametrize("in_order", [True, False])
def test_busy_time_per_bucket_is_what_the_intervals_cover(in_order):
    rng = np.random.default_rng(7)
    gaps, durs = rng.integers(0, 3000, 2000), rng.integers(0, 9000, 2000)
    start = np.cumsum(gaps + np.r_[0, durs[:-1]]).astype(np.int64)  # disjoint, sorted
    end = start + durs
    if not in_order:  # disjoint intervals in any order take the general path
        shuffled = rng.permutation(len(start))
        start, end = start[shuffled], end[shuffled]
    for width in (64, 1000, 4096, 1 << 20):
        bucket, busy = busy_per_bucket(start, end, width)
        expected = busy_by_hand(start, end, width)
        assert bucket.tolist() == sorted(expected)
        assert busy.tolist() == [expected[b] for b in sorted(expected)]
        assert busy.dtype == np.int64
