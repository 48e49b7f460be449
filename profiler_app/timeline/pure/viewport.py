"""Viewport queries over part indexes: what one screen of the timeline needs, whatever its zoom.

A window [start_ns, end_ns) drawn ``width_px`` pixels wide is cut into buckets of ``2**k`` ns,
the largest power of two not wider than a pixel. For each row, events lasting at least a bucket
come back one by one; all shorter ones merge into one block per bucket (count, summed duration
and the name of the longest). Every event is counted exactly once: individually when wide,
otherwise in the bucket where it starts. Wide events that started before the window come back
too, flagged as ``continued``, and belong to the window where they start.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from profiler_app.timeline.pure import activity as activity_mod
from profiler_app.timeline.pure.activity import MAX_K
from profiler_app.timeline.pure.index import PartIndex
from profiler_app.timeline.pure.levels import CLASS_REACH_NS, CLASS_SHIFT, MAX_REL_NS, N_CLASSES
from profiler_app.traces.arrays import run_starts

MAX_BUCKETS = 16384


@dataclass(frozen=True)
class Window:
    """A window snapped outwards to whole buckets of ``2**k`` ns."""

    start_ns: int
    end_ns: int
    k: int

    @property
    def bucket_ns(self) -> int:
        return 1 << self.k

    @property
    def n_buckets(self) -> int:
        return (self.end_ns - self.start_ns) >> self.k

    @classmethod
    def for_view(cls, start_ns: int, end_ns: int, width_px: int) -> Window:
        if end_ns <= start_ns or width_px <= 0:
            raise ValueError("the window must have a positive duration and width")
        per_px = (end_ns - start_ns) / width_px
        k = max(int(np.floor(np.log2(per_px))), 0) if per_px >= 1 else 0
        while ((end_ns - start_ns) >> k) + 2 > MAX_BUCKETS and k < MAX_K:
            k += 1
        return cls.at_level(start_ns, end_ns, min(k, MAX_K))

    def coarser(self, width_px: int) -> Window:
        """The same window in buckets at least a pixel wide, for strips drawn per pixel."""
        k = self.k
        while (self.n_buckets >> (k - self.k)) > width_px and k < MAX_K:
            k += 1
        return Window.at_level(self.start_ns, self.end_ns, k)

    @classmethod
    def at_level(cls, start_ns: int, end_ns: int, k: int) -> Window:
        width = 1 << k
        lo = start_ns - start_ns % width
        hi = end_ns + (-end_ns) % width
        return cls(lo, max(hi, lo + width), k)


@dataclass(frozen=True)
class RowView:
    """One row's answer. Events are index positions into the part's index arrays."""

    depth: int
    events: np.ndarray  # event indices, in start order
    block_start_ns: np.ndarray  # blocks are runs of adjacent buckets with the same name
    block_end_ns: np.ndarray
    block_count: np.ndarray
    block_busy_ns: np.ndarray
    block_name: np.ndarray  # store string id of the longest event of each bucket


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenation of the integer ranges [lo_i, hi_i)."""
    lengths = np.maximum(hi - lo, 0)
    total = int(lengths.sum())
    if not total:
        return np.empty(0, np.int64)
    starts = np.repeat(lo - np.r_[0, np.cumsum(lengths)[:-1]], lengths)
    return starts + np.arange(total)


def _class_slices(ix: PartIndex, row: int, classes: np.ndarray, lo_rel, hi_rel) -> np.ndarray:
    """Event indices of ``row`` in ``classes`` starting in [lo_rel, hi_rel) (per class)."""
    a, b = int(ix.row_off[row]), int(ix.row_off[row + 1])
    keys = ix.ckey[a:b]
    shifted = classes.astype(np.int64) << CLASS_SHIFT
    lo = np.searchsorted(keys, shifted | lo_rel)
    hi = np.searchsorted(keys, shifted | hi_rel)
    return np.asarray(ix.cidx[a + _ranges(lo, hi)], dtype=np.int64)


def _rel(ix: PartIndex, t_ns: int | np.ndarray) -> np.ndarray:
    return np.clip(np.asarray(t_ns, dtype=np.int64) - ix.origin_ns, 0, MAX_REL_NS)


def wide_events(ix: PartIndex, row: int, window: Window) -> np.ndarray:
    """Events of ``row`` lasting at least a bucket and overlapping the window, in start order."""
    classes = np.arange(window.k + 1, N_CLASSES)
    # A class-c event overlapping the window starts at most its longest duration before it.
    lo_rel = _rel(ix, window.start_ns - np.minimum(CLASS_REACH_NS[classes], window.start_ns))
    hi_rel = _rel(ix, window.end_ns)
    idx = _class_slices(ix, row, classes, lo_rel, np.full(len(classes), hi_rel))
    start = ix.start[idx]
    keep = start + ix.dur[idx] > window.start_ns
    idx, start = idx[keep], start[keep]
    return idx[np.argsort(start, kind="stable")]


def narrow_blocks(ix: PartIndex, row: int, window: Window) -> tuple[np.ndarray, ...]:
    """(bucket start ns, count, summed duration, name) of the row's shorter-than-a-bucket
    events, one entry per non-empty bucket of the window."""
    first, stop = window.start_ns >> window.k, window.end_ns >> window.k
    level = ix.level(row, window.k)
    if level is not None:
        shift = window.k - level.k  # > 0 only for a row's single terminal bucket
        fine = ix.level_bucket[level.offset : level.offset + level.length]
        lo, hi = np.searchsorted(fine, [first << shift, stop << shift])
        sel = slice(level.offset + int(lo), level.offset + int(hi))
        return (
            (np.asarray(ix.level_bucket[sel]) >> shift) << window.k,
            np.asarray(ix.level_count[sel]),
            np.asarray(ix.level_busy[sel]),
            np.asarray(ix.level_name[sel]),
        )
    classes = np.arange(0, min(window.k, N_CLASSES - 1) + 1)
    n = len(classes)
    idx = _class_slices(
        ix,
        row,
        classes,
        np.full(n, _rel(ix, window.start_ns)),
        np.full(n, _rel(ix, window.end_ns)),
    )
    start = ix.start[idx]
    keep = (start >= window.start_ns) & (start < window.end_ns)
    idx, start = idx[keep], start[keep]
    if not len(idx):
        empty = np.empty(0, np.int64)
        return empty, empty, empty, np.empty(0, np.int32)
    bucket = start >> window.k
    dur = ix.dur[idx]
    order = np.lexsort((dur, bucket))
    bucket, dur, idx = bucket[order], dur[order], idx[order]
    group = run_starts(bucket)
    last = np.r_[group[1:] - 1, len(bucket) - 1]
    return (
        bucket[group] << window.k,
        np.diff(np.r_[group, len(bucket)]),
        np.add.reduceat(dur, group),
        np.asarray(ix.name[idx[last]]),
    )


def _merge_runs(window: Window, start, count, busy, name) -> tuple[np.ndarray, ...]:
    """Adjacent buckets dominated by the same name become one block."""
    if not len(start):
        return start, start, count, busy, name
    bucket = start >> window.k
    first = np.flatnonzero(np.r_[True, (np.diff(bucket) != 1) | (name[1:] != name[:-1])])
    last = np.r_[first[1:] - 1, len(bucket) - 1]
    return (
        start[first],
        (bucket[last] + 1) << window.k,
        np.add.reduceat(count, first),
        np.add.reduceat(busy, first),
        name[first],
    )


def row_view(ix: PartIndex, row: int, window: Window) -> RowView:
    blocks = _merge_runs(window, *narrow_blocks(ix, row, window))
    return RowView(int(ix.row_depth[row]), wide_events(ix, row, window), *blocks)


def lane_rows(ix: PartIndex, lane: int) -> list[int]:
    return list(ix.lanes[lane].rows)


def _sums(
    ix: PartIndex, prefix: str, subject: int, window: Window, starts
) -> tuple[np.ndarray, ...]:
    first, n = window.start_ns >> window.k, window.n_buckets
    level = ix.activity(prefix, subject, window.k)
    if level is not None:
        return activity_mod.window_sums(level, first, n)
    span_start, span_end = ix.spans(prefix, subject)
    lo = np.searchsorted(span_end, window.start_ns, side="right")
    hi = np.searchsorted(span_start, window.end_ns)
    return activity_mod.direct_sums(
        starts(), span_start[lo:hi], span_end[lo:hi], window.k, first, n
    )


def activity(ix: PartIndex, lane: int | None, window: Window) -> tuple[np.ndarray, np.ndarray]:
    """Per bucket of the window: events of ``lane`` (None: of the whole part) starting in it,
    and the time they cover in it (what a collapsed group draws)."""
    rows = range(len(ix.row_off) - 1) if lane is None else lane_rows(ix, lane)

    def starts() -> np.ndarray:
        parts = []
        for row in rows:
            a, b = int(ix.row_off[row]), int(ix.row_off[row + 1])
            lo, hi = a + np.searchsorted(ix.start[a:b], [window.start_ns, window.end_ns])
            parts.append(ix.start[lo:hi])
        return np.concatenate(parts) if parts else np.empty(0, np.int64)

    subject = len(ix.lanes) if lane is None else lane
    count, busy = _sums(ix, "act", subject, window, starts)
    return count, busy


def device_busy(ix: PartIndex, device: int, window: Window) -> np.ndarray | None:
    """Per bucket, the time at least one kernel ran on ``device`` (None: no kernels there)."""
    found = np.flatnonzero(ix.util_device == device)
    if not len(found):
        return None
    _, busy = _sums(ix, "util", int(found[0]), window, lambda: np.empty(0, np.int64))
    return busy
