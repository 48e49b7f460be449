"""Totals of a selected time range over some tracks (Perfetto's area selection), from the index.

An event is in the range [start_ns, end_ns) when it overlaps it (an instant: when it lies in it).
Every duration reported is the part of the event inside the range, as Perfetto's "wall
duration" of an area selection counts it: ``total_ns`` is the summed clipped duration, ``min_ns``
/``max_ns``/the average are over clipped durations, and ``pct_of_range`` is ``total_ns`` over the
range's length. ``self_ns`` (CPU threads' lanes only: operators and Python functions) is the
one self time (``traces.nesting.self_times``) clipped to the range: the clipped duration less
the part of the range its direct children on the thread cover, the CUDA runtime calls it makes
included, wherever the timeline draws them.

Per row (one depth of one lane) events are in start order: those starting inside the range are
one slice (two binary searches), those starting before it and reaching into it come from the
duration classes (as for a viewport). Of the slice, the index's super-blocks, then blocks
(``block_sums``), wholly inside the range add their stored sums per name; only the events of
the blocks at its edges are read one by one. All the rows a part has in the request are
handled at once: the binary searches go row by row, everything after them is one numpy pass
over the part's hits, counted per (lane, name) with ``bincount``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from profiler_app.timeline.pure.index import BlockSums, PartIndex
from profiler_app.timeline.pure.lanes import THREAD
from profiler_app.timeline.pure.levels import CLASS_REACH_NS, CLASS_SHIFT, N_CLASSES
from profiler_app.timeline.pure.query import JobTimeline
from profiler_app.timeline.pure.tree import TreeNode
from profiler_app.timeline.pure.viewport import _ranges, _rel

MAX_TRACKS = 2000
MAX_EVENTS = 5000
# (lane, name) pairs of a part counted in a dense table up to this many; past it, sorted.
_DENSE_KEYS = 1 << 22


@dataclass
class RangeRow:
    track: str
    name: str
    count: int
    total_ns: int
    self_ns: int | None
    min_ns: int
    max_ns: int


def event_lanes(job: JobTimeline, ids: list[str]) -> list[TreeNode]:
    """The event lanes the ids name: a group stands for every lane below it (once each)."""
    out: dict[str, TreeNode] = {}
    for track_id in ids:
        for lane in job.node(track_id).walk():
            if lane.data == "events":
                out.setdefault(lane.id, lane)
    return list(out.values())


@dataclass(frozen=True)
class _Found:
    """What a part's rows hold in the range, each entry labelled with its row's output lane:
    events read one by one (``label``, index position ``idx``, clipped duration) and the
    per-name sums of the blocks wholly inside the range (``sums``: ``BlockSums`` columns, each
    row labelled by ``sums_label``)."""

    label: np.ndarray
    idx: np.ndarray
    clipped: np.ndarray
    sums_label: np.ndarray
    sums: dict[str, np.ndarray]


_SUMMED = ("name", "count", "total", "self_ns", "min_ns", "max_ns")


def _find(
    ix: PartIndex, rows: np.ndarray, labels: np.ndarray, start_ns: int, end_ns: int, blocks: bool
) -> _Found:
    """The events of ``rows`` in the range, all rows at once: only the binary searches go row
    by row (a few numpy calls each); gathering, filtering and clipping are one pass."""
    classes = np.arange(N_CLASSES)
    reach = np.minimum(CLASS_REACH_NS[classes], max(start_ns, 0))
    shifted = classes.astype(np.int64) << CLASS_SHIFT
    # Started before the range: a class-c event starts at most its longest duration earlier.
    keys = np.concatenate(
        [shifted | _rel(ix, start_ns - reach), shifted | _rel(ix, np.full(N_CLASSES, start_ns))]
    )
    n = len(rows)
    lo, hi = np.empty(n, np.int64), np.empty(n, np.int64)
    class_lo, class_hi = np.empty((n, N_CLASSES), np.int64), np.empty((n, N_CLASSES), np.int64)
    for i, row in enumerate(rows.tolist()):
        a, b = int(ix.row_off[row]), int(ix.row_off[row + 1])
        lo[i], hi[i] = np.searchsorted(ix.start[a:b], (start_ns, end_ns)) + a
        found = np.searchsorted(ix.ckey[a:b], keys) + a
        class_lo[i], class_hi[i] = found[:N_CLASSES], found[N_CLASSES:]
    before = np.asarray(ix.cidx[_ranges(class_lo.ravel(), class_hi.ravel())], dtype=np.int64)
    before_label = np.repeat(labels, (class_hi - class_lo).sum(axis=1))
    began = ix.start[before]
    ends = began + ix.dur[before]
    keep = (began < start_ns) & (ends > start_ns)
    before, before_label, ends = before[keep], before_label[keep], ends[keep]

    # The events starting inside: as much as possible from the whole blocks wholly inside the
    # range, the largest first; what no whole block covers, event by event.
    read_lo, read_hi, read_label = lo, hi, labels
    sums_label, sums = [np.zeros(0, np.int64)], {c: [np.zeros(0, np.int64)] for c in _SUMMED}
    for level in ix.block_sums() if blocks else []:
        read_lo, read_hi, read_label, taken, taken_label = _whole_blocks(
            level, read_lo, read_hi, read_label, end_ns
        )
        first, stop = level.off[taken], level.off[taken + 1]
        entries = _ranges(first, stop)
        sums_label.append(np.repeat(taken_label, stop - first))
        for column in _SUMMED:
            sums[column].append(np.asarray(getattr(level, column)[entries], np.int64))
    inside = _ranges(read_lo, read_hi)
    inside_label = np.repeat(read_label, np.maximum(read_hi - read_lo, 0))
    clipped_inside = np.minimum(ix.dur[inside], end_ns - ix.start[inside])
    return _Found(
        np.concatenate([before_label, inside_label]),
        np.concatenate([before, inside]),
        np.concatenate([np.minimum(ends, end_ns) - start_ns, clipped_inside]),
        np.concatenate(sums_label),
        {c: np.concatenate(v) for c, v in sums.items()},
    )


def _whole_blocks(
    level: BlockSums, lo: np.ndarray, hi: np.ndarray, label: np.ndarray, end_ns: int
) -> tuple[np.ndarray, ...]:
    """Of the labelled intervals [lo, hi) of index positions, the blocks of ``level`` wholly
    inside one whose events all end by ``end_ns`` (taken: their sums count), and the intervals
    still to cover: each interval's head and tail, and its blocks not taken. Returns (left lo,
    left hi, left label, taken blocks, their labels)."""
    size = level.events
    first = -(-lo // size)
    stop = np.maximum(hi // size, first)
    has = first < stop
    block = _ranges(first, stop)
    block_of = np.repeat(np.arange(len(lo)), stop - first)
    whole = level.end[block] <= end_ns if len(block) else np.zeros(0, dtype=bool)
    partial = block[~whole]
    left_lo = np.concatenate([lo, partial * size, np.where(has, stop * size, hi)])
    left_hi = np.concatenate([np.where(has, first * size, hi), (partial + 1) * size, hi])
    left_label = np.concatenate([label, label[block_of[~whole]], label])
    keep = left_hi > left_lo
    return left_lo[keep], left_hi[keep], left_label[keep], block[whole], label[block_of[whole]]


def _clipped_self(ix: PartIndex, idx: np.ndarray, clipped: np.ndarray, start_ns: int, end_ns: int):
    """The self time (``traces.nesting.self_times``) of each hit within the range: the stored
    one for events wholly inside it; for the few cut by its edges, their clipped duration less
    the part of the range their children cover."""
    begin, stop = ix.start[idx], ix.start[idx] + ix.dur[idx]
    inside = (begin >= start_ns) & (stop <= end_ns)
    own = np.where(inside, ix.self_ns[idx], clipped).astype(np.int64)
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


def _part_totals(ix: PartIndex, rows: np.ndarray, labels: np.ndarray, start_ns, end_ns):
    """(label, name id, count, total, self, min, max) arrays per (label, name) of the part's
    ``rows`` in the range."""
    lanes, local = np.unique(labels, return_inverse=True)  # the few lanes of this part
    found = _find(ix, rows, local, start_ns, end_ns, blocks=True)
    sums = found.sums
    label = np.concatenate([found.label, found.sums_label])
    names = np.concatenate([np.asarray(ix.name[found.idx], np.int64), sums["name"]])
    if not len(names):
        return None
    clipped = found.clipped
    counts = np.concatenate([np.ones(len(found.idx), np.int64), sums["count"]])
    durations = np.concatenate([clipped, sums["total"]])
    own = np.concatenate([_clipped_self(ix, found.idx, clipped, start_ns, end_ns), sums["self_ns"]])
    n_names = int(names.max()) + 1
    key = label * n_names + names
    if len(lanes) * n_names <= _DENSE_KEYS:  # counted in place: no sort of the hits
        size = len(lanes) * n_names
        at, keys = key, np.flatnonzero(np.bincount(key, minlength=size))
        slot = np.zeros(size, np.int64)
        slot[keys] = np.arange(len(keys))
        at = slot[key]
    else:
        keys, at = np.unique(key, return_inverse=True)
    count = np.bincount(at, weights=counts).astype(np.int64)
    total = np.rint(np.bincount(at, weights=durations)).astype(np.int64)
    self_ns = np.rint(np.bincount(at, weights=own)).astype(np.int64)
    low = np.full(len(keys), np.iinfo(np.int64).max, dtype=np.int64)
    high = np.zeros(len(keys), dtype=np.int64)
    np.minimum.at(low, at, np.concatenate([clipped, sums["min_ns"]]))
    np.maximum.at(high, at, np.concatenate([clipped, sums["max_ns"]]))
    return lanes[keys // n_names], keys % n_names, count, total, self_ns, low, high


def _rows_by_part(lanes: list[TreeNode]) -> dict:
    """For each part: its rows in the lanes and, per row, its lane's place in ``lanes``."""
    out: dict = {}
    for place, node in enumerate(lanes):
        for part, lane in node.members:
            rows, labels, _ = out.setdefault(part.id, ([], [], part))
            lane_rows = [int(r) for r in part.index.lanes[lane].rows]
            rows += lane_rows
            labels += [place] * len(lane_rows)
    return {
        part_id: (part, np.asarray(rows, np.int64), np.asarray(labels, np.int64))
        for part_id, (rows, labels, part) in out.items()
    }


def range_totals(
    job: JobTimeline, start_ns: int, end_ns: int, track_ids: list[str]
) -> list[RangeRow]:
    """Rows per (track, name) of the events in [start_ns, end_ns), largest total first."""
    lanes = event_lanes(job, track_ids)
    with_self = [node.kind == THREAD for node in lanes]
    by_key: dict[tuple[int, str], RangeRow] = {}
    for part, rows, labels in _rows_by_part(lanes).values():
        found = _part_totals(part.index, rows, labels, start_ns, end_ns)
        if found is None:
            continue
        strings = part.index.strings
        columns = zip(*(column.tolist() for column in found), strict=True)
        for place, name_id, count, total, self_ns, low, high in columns:
            name = strings[name_id]
            row = by_key.get((place, name))
            if row is None:
                own = self_ns if with_self[place] else None
                by_key[place, name] = RangeRow(lanes[place].id, name, count, total, own, low, high)
                continue
            row.count += count
            row.total_ns += total
            if row.self_ns is not None:
                row.self_ns += self_ns
            row.min_ns, row.max_ns = min(row.min_ns, low), max(row.max_ns, high)
    out = list(by_key.values())
    out.sort(key=lambda r: (-r.total_ns, r.track, r.name))
    return out


def range_events(
    job: JobTimeline, start_ns: int, end_ns: int, track_ids: list[str], name: str, limit: int
) -> tuple[int, list[dict]]:
    """The events named ``name`` in the range: how many, and the earliest ``limit``."""
    lanes = event_lanes(job, track_ids)
    picked: list[tuple[int, str, int, int, str, int]] = []
    total = 0
    for part, rows, labels in _rows_by_part(lanes).values():
        ix = part.index
        try:
            name_id = ix.strings.index(name)
        except ValueError:
            continue
        found = _find(ix, rows, labels, start_ns, end_ns, blocks=False)
        named = ix.name[found.idx] == name_id
        idx, place = found.idx[named], found.label[named]
        total += len(idx)
        earliest = np.argsort(ix.start[idx], kind="stable")[:limit]
        depth = np.asarray(ix.row_depth)[np.searchsorted(ix.row_off, idx[earliest], "right") - 1]
        for i, lane, row_depth in zip(
            idx[earliest].tolist(), place[earliest].tolist(), depth.tolist(), strict=True
        ):
            picked.append((int(ix.start[i]), lanes[lane].id, part.id, i, name, row_depth))
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
