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
its edges are read one by one. All the rows a part has in the request are handled at once: the
binary searches go row by row, everything after them is one numpy pass over the part's hits,
counted per (lane, name) with ``bincount``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from profiler_app.timeline.pure.index import PartIndex
from profiler_app.timeline.pure.lanes import THREAD
from profiler_app.timeline.pure.levels import CLASS_REACH_NS, CLASS_SHIFT, N_CLASSES
from profiler_app.timeline.pure.query import JobTimeline, UnknownTrack
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
        node = job.nodes.get(track_id)
        if node is None:
            raise UnknownTrack(track_id)
        for lane in node.walk():
            if lane.data == "events":
                out.setdefault(lane.id, lane)
    return list(out.values())


@dataclass(frozen=True)
class _Found:
    """What a part's rows hold in the range, each entry labelled with its row's output lane
    (``label``): events read one by one (index position, clipped duration) and the per-name
    entries of blocks wholly inside the range (positions in the ``blk_*`` arrays)."""

    label: np.ndarray
    idx: np.ndarray
    clipped: np.ndarray
    block_label: np.ndarray
    entries: np.ndarray


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

    size = ix.block_events
    first = -(-lo // size) if blocks else hi  # no whole blocks: every event read
    stop = np.maximum(hi // size, first) if blocks else hi
    has_blocks = first < stop
    block = _ranges(first, stop)
    block_row = np.repeat(np.arange(n), stop - first)
    whole = ix.blk_end[block] <= end_ns if len(block) else np.zeros(0, dtype=bool)
    # Read one by one: before the first whole-size block, the blocks not wholly inside, after
    # the last; a row without any such block, all of it.
    head_stop = np.where(has_blocks, first * size, hi)
    tail_start = np.where(has_blocks, stop * size, hi)
    partial = block[~whole]
    read_lo = np.concatenate([lo, partial * size, tail_start])
    read_hi = np.concatenate([head_stop, (partial + 1) * size, hi])
    read_label = np.concatenate([labels, labels[block_row[~whole]], labels])
    inside = _ranges(read_lo, read_hi)
    inside_label = np.repeat(read_label, np.maximum(read_hi - read_lo, 0))
    clipped_inside = np.minimum(ix.dur[inside], end_ns - ix.start[inside])

    wholes = block[whole]
    off = np.asarray(ix.blk_off)
    entries = _ranges(off[wholes], off[wholes + 1]) if len(wholes) else np.zeros(0, np.int64)
    entry_label = np.repeat(labels[block_row[whole]], off[wholes + 1] - off[wholes])
    return _Found(
        np.concatenate([before_label, inside_label]),
        np.concatenate([before, inside]),
        np.concatenate([np.minimum(ends, end_ns) - start_ns, clipped_inside]),
        entry_label,
        entries,
    )


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
    entries = found.entries
    label = np.concatenate([found.label, found.block_label])
    names = np.concatenate(
        [np.asarray(ix.name[found.idx], np.int64), np.asarray(ix.blk_name[entries], np.int64)]
    )
    if not len(names):
        return None
    clipped = found.clipped
    counts = np.concatenate([np.ones(len(found.idx), np.int64), ix.blk_count[entries]])
    durations = np.concatenate([clipped, ix.blk_total[entries]])
    own = np.concatenate(
        [_clipped_self(ix, found.idx, clipped, start_ns, end_ns), ix.blk_self[entries]]
    )
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
    np.minimum.at(low, at, np.concatenate([clipped, ix.blk_min[entries]]))
    np.maximum.at(high, at, np.concatenate([clipped, ix.blk_max[entries]]))
    return lanes[keys // n_names], keys % n_names, count, total, self_ns, low, high


def _rows_by_part(lanes: list[TreeNode]) -> dict:
    """For each part: its rows in the lanes and, per row, its lane's place in ``lanes``."""
    out: dict = {}
    for place, node in enumerate(lanes):
        for part, lane in node.members:
            rows, labels, _ = out.setdefault(part.id, ([], [], part))
            lane_rows = [int(r) for r in part.index.lanes[lane]["rows"]]
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
