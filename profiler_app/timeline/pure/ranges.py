"""Totals of a selected time range over some tracks (Perfetto's area selection), from the index.

An event is in the range [start_ns, end_ns) when it overlaps it (an instant: when it lies in it).
Every duration reported is the part of the event inside the range, as Perfetto's "wall
duration" of an area selection counts it: ``total_ns`` is the summed clipped duration, ``min_ns``
/``max_ns``/the average are over clipped durations, and ``pct_of_range`` is ``total_ns`` over the
range's length. ``self_ns`` (CPU threads' lanes only: operators and Python functions) is the
clipped duration minus that of the events nested directly inside, in the same lane; runtime
calls a thread makes are drawn on its GPU host lane, so they are not subtracted.

Per row (one depth of one lane) events are in start order: those starting inside the range are
one slice (two binary searches), those starting before it and reaching into it come from the
duration classes (as for a viewport). Of the slice, the index's blocks (``block_events`` events
each) wholly inside the range add their stored sums per name; only the events of the blocks at
its edges are read one by one. Counting is numpy's ``bincount`` over names.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from profiler_app.timeline.pure.index import PartIndex
from profiler_app.timeline.pure.lanes import THREAD
from profiler_app.timeline.pure.levels import CLASS_REACH_NS, N_CLASSES
from profiler_app.timeline.pure.query import JobTimeline, UnknownTrack
from profiler_app.timeline.pure.tree import TreeNode
from profiler_app.timeline.pure.viewport import _class_slices, _rel

MAX_TRACKS = 2000
MAX_EVENTS = 5000


@dataclass
class RangeRow:
    track: str
    name: str
    count: int
    total_ns: int
    self_ns: int | None
    min_ns: int
    max_ns: int


@dataclass(frozen=True)
class _Hits:
    """Events of one row in the range: index positions and their clipped durations."""

    idx: np.ndarray
    clipped: np.ndarray


def event_lanes(job: JobTimeline, ids: list[str]) -> list[TreeNode]:
    """The event lanes the ids name: a group stands for every lane below it (once each)."""
    out: dict[str, TreeNode] = {}
    for track_id in ids:
        node = job.nodes.get(track_id)
        if node is None:
            raise UnknownTrack(track_id)
        for lane in node.walk():
            if lane.data == "events":
                out.setdefault(lane.id, lane)
    return list(out.values())


@dataclass(frozen=True)
class _Sums:
    """Per name entries of whole blocks: (name, count, total, self, min, max) arrays."""

    name: np.ndarray
    count: np.ndarray
    total: np.ndarray
    self_ns: np.ndarray
    low: np.ndarray
    high: np.ndarray


def _row_slices(ix: PartIndex, row: int, start_ns: int, end_ns: int) -> tuple[_Hits, _Sums]:
    """The row's events in the range: those read one by one, and the sums of whole blocks.
    A block counts whole when all its events start in the range and end by its end."""
    lo, hi = _starting_inside(ix, row, start_ns, end_ns)
    size = ix.block_events
    first, stop = -(-lo // size), hi // size
    whole = np.zeros(0, dtype=bool)
    if first < stop:
        whole = ix.blk_end[first:stop] <= end_ns
    blocks = np.arange(first, first + len(whole))
    read = [np.arange(lo, hi if not len(whole) else first * size, dtype=np.int64)]
    read += [np.arange(k * size, (k + 1) * size) for k in blocks[~whole]]
    if len(whole):
        read.append(np.arange(stop * size, hi, dtype=np.int64))
    inside = np.concatenate(read)
    entries = np.zeros(0, dtype=np.int64)
    if whole.any():
        off = ix.blk_off[first : stop + 1]
        entries = np.arange(int(off[0]), int(off[-1]))[np.repeat(whole, np.diff(off))]
    sums = _Sums(
        ix.blk_name[entries],
        ix.blk_count[entries],
        ix.blk_total[entries],
        ix.blk_self[entries],
        ix.blk_min[entries],
        ix.blk_max[entries],
    )
    return _edge_hits(ix, row, inside, start_ns, end_ns), sums


def _row_hits(ix: PartIndex, row: int, start_ns: int, end_ns: int) -> _Hits:
    """Every event of the row in the range, one by one."""
    lo, hi = _starting_inside(ix, row, start_ns, end_ns)
    return _edge_hits(ix, row, np.arange(lo, hi, dtype=np.int64), start_ns, end_ns)


def _starting_inside(ix: PartIndex, row: int, start_ns: int, end_ns: int) -> tuple[int, int]:
    """Index positions [lo, hi) of the row's events that start in the range."""
    a, b = int(ix.row_off[row]), int(ix.row_off[row + 1])
    starts = ix.start[a:b]
    lo = a + int(np.searchsorted(starts, start_ns, side="left"))
    return lo, a + int(np.searchsorted(starts, end_ns, side="left"))


def _edge_hits(ix: PartIndex, row: int, inside: np.ndarray, start_ns: int, end_ns: int) -> _Hits:
    """``inside`` (events starting in the range) and the row's events that start before it
    and reach into it, with their clipped durations."""
    clipped_inside = np.minimum(ix.dur[inside], end_ns - ix.start[inside])
    # Started before the range: a class-c event starts at most its longest duration earlier.
    classes = np.arange(N_CLASSES)
    reach = np.minimum(CLASS_REACH_NS[classes], max(start_ns, 0))
    before = _class_slices(
        ix, row, classes, _rel(ix, start_ns - reach), np.full(N_CLASSES, _rel(ix, start_ns))
    )
    before = before[ix.start[before] < start_ns]
    ends = ix.start[before] + ix.dur[before]
    before = before[ends > start_ns]
    clipped_before = np.minimum(ends[ends > start_ns], end_ns) - start_ns
    return _Hits(np.concatenate([before, inside]), np.concatenate([clipped_before, clipped_inside]))


def _clipped_self(ix: PartIndex, hits: _Hits, start_ns: int, end_ns: int) -> np.ndarray:
    """The self time (``traces.nesting.self_times``) of each hit within the range: the stored
    one for events wholly inside it; for the few cut by its edges, their clipped duration less
    the part of the range their children cover."""
    idx = hits.idx
    begin, stop = ix.start[idx], ix.start[idx] + ix.dur[idx]
    inside = (begin >= start_ns) & (stop <= end_ns)
    own = np.where(inside, ix.self_ns[idx], hits.clipped).astype(np.int64)
    cut = np.flatnonzero(~inside)
    if not len(cut):
        return own
    cut_idx = np.sort(idx[cut])
    # Searched in the array's own type: another would convert all of it first.
    wanted = cut_idx.astype(ix.child_parent.dtype)
    first = np.searchsorted(ix.child_parent, wanted, side="left")
    many = np.searchsorted(ix.child_parent, wanted, side="right") - first
    # Each cut event's children: its run of child_order, the runs one after another.
    runs = np.repeat(first - np.cumsum(np.r_[0, many[:-1]]), many)
    children = np.asarray(ix.child_order[runs + np.arange(int(many.sum()))], dtype=np.int64)
    if len(children):
        up = np.asarray(ix.parent[children])
        lo = np.maximum.reduce([ix.start[children], ix.start[up], np.full(len(up), start_ns)])
        hi = np.minimum.reduce(
            [
                ix.start[children] + ix.dur[children],
                ix.start[up] + ix.dur[up],
                np.full(len(up), end_ns),
            ]
        )
        covered = np.bincount(
            np.searchsorted(cut_idx, up), weights=np.clip(hi - lo, 0, None), minlength=len(cut_idx)
        )
        own[cut] -= covered[np.searchsorted(cut_idx, idx[cut])].astype(np.int64)
    return np.maximum(own, 0)


def _lane_totals(ix: PartIndex, lane: int, start_ns: int, end_ns: int, with_self: bool):
    """(name id, count, total, self, min, max) arrays of one part lane in the range."""
    rows = [int(r) for r in ix.lanes[lane]["rows"]]
    found = [_row_slices(ix, r, start_ns, end_ns) for r in rows]
    hits, sums = [h for h, _ in found], [s for _, s in found]
    idx = np.concatenate([h.idx for h in hits])
    block_names = np.concatenate([s.name for s in sums]).astype(np.int64)
    if not len(idx) and not len(block_names):
        return None
    clipped = np.concatenate([h.clipped for h in hits])
    names = np.concatenate([np.asarray(ix.name[idx], dtype=np.int64), block_names])
    counts = np.concatenate([np.ones(len(idx), dtype=np.int64), *[s.count for s in sums]])
    durations = np.concatenate([clipped, *[s.total for s in sums]])
    lows = np.concatenate([clipped, *[s.low for s in sums]])
    highs = np.concatenate([clipped, *[s.high for s in sums]])
    size = int(names.max()) + 1
    count = np.bincount(names, weights=counts, minlength=size).astype(np.int64)
    total = np.bincount(names, weights=durations, minlength=size)
    low = np.full(size, np.iinfo(np.int64).max, dtype=np.int64)
    high = np.zeros(size, dtype=np.int64)
    np.minimum.at(low, names, lows)
    np.maximum.at(high, names, highs)
    self_ns = None
    if with_self:
        own = np.concatenate(
            [
                *[_clipped_self(ix, h, start_ns, end_ns) for h in hits],
                *[s.self_ns for s in sums],
            ]
        )
        self_ns = np.bincount(names, weights=own, minlength=size)
    ids = np.flatnonzero(count)
    return (
        ids,
        count[ids],
        np.rint(total[ids]).astype(np.int64),
        None if self_ns is None else np.rint(self_ns[ids]).astype(np.int64),
        low[ids],
        high[ids],
    )


def range_totals(
    job: JobTimeline, start_ns: int, end_ns: int, track_ids: list[str]
) -> list[RangeRow]:
    """Rows per (track, name) of the events in [start_ns, end_ns), largest total first."""
    out: list[RangeRow] = []
    for node in event_lanes(job, track_ids):
        with_self = node.kind == THREAD
        by_name: dict[str, RangeRow] = {}
        for part, lane in node.members:
            found = _lane_totals(part.index, lane, start_ns, end_ns, with_self)
            if found is None:
                continue
            strings = part.index.strings
            ids_a, count_a, total_a, self_a, low_a, high_a = found
            ids, count, total = ids_a.tolist(), count_a.tolist(), total_a.tolist()
            low, high = low_a.tolist(), high_a.tolist()
            self_ns = self_a.tolist() if self_a is not None else None
            for j, name_id in enumerate(ids):
                row = by_name.get(strings[name_id])
                if row is None:
                    by_name[strings[name_id]] = RangeRow(
                        node.id,
                        strings[name_id],
                        count[j],
                        total[j],
                        self_ns[j] if self_ns is not None else None,
                        low[j],
                        high[j],
                    )
                    continue
                row.count += count[j]
                row.total_ns += total[j]
                if row.self_ns is not None and self_ns is not None:
                    row.self_ns += self_ns[j]
                row.min_ns, row.max_ns = min(row.min_ns, low[j]), max(row.max_ns, high[j])
        out.extend(by_name.values())
    out.sort(key=lambda r: (-r.total_ns, r.track, r.name))
    return out


def range_events(
    job: JobTimeline, start_ns: int, end_ns: int, track_ids: list[str], name: str, limit: int
) -> tuple[int, list[dict]]:
    """The events named ``name`` in the range: how many, and the earliest ``limit``."""
    picked: list[tuple[int, str, int, int, str, int]] = []
    total = 0
    for node in event_lanes(job, track_ids):
        for part, lane in node.members:
            ix = part.index
            try:
                name_id = ix.strings.index(name)
            except ValueError:
                continue
            for row in ix.lanes[lane]["rows"]:
                hits = _row_hits(ix, int(row), start_ns, end_ns)
                idx = hits.idx[ix.name[hits.idx] == name_id]
                total += len(idx)
                depth = int(ix.row_depth[row])
                for i in idx[np.argsort(ix.start[idx], kind="stable")][:limit].tolist():
                    picked.append((int(ix.start[i]), node.id, part.id, i, name, depth))
    picked.sort()
    events = [
        {
            "id": f"{part_id}:{i}",
            "name": event_name,
            "start_ns": str(start),
            "dur_ns": int(job.parts[part_id].index.dur[i]),
            "track": track,
            "depth": depth,
        }
        for start, track, part_id, i, event_name, depth in picked[:limit]
    ]
    return total, events
