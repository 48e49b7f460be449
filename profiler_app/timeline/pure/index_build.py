"""Build the timeline index of one part from its timeline store (see ``index`` for the layout).

Run by the worker once per part, right after the ingest wrote the store and before the part is
done (or by the sweep, for stores from before): it reads the store's events once, assigns lanes
and nesting depths, and writes flat ``.npy`` arrays that the web process memory-maps.

One module on purpose (over 600 lines): it writes every array ``index`` reads, in one pass over
the store, so the writer of each array and its layout are read side by side with the others.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path

import numpy as np
import pandas as pd

from profiler_app.lib.memory import hand_back_freed
from profiler_app.timeline.pure import lanes as lanes_mod
from profiler_app.timeline.pure.activity import MAX_K as ACTIVITY_MAX_K
from profiler_app.timeline.pure.activity import MIN_RATIO as ACTIVITY_MIN_RATIO
from profiler_app.timeline.pure.activity import build_activity
from profiler_app.timeline.pure.levels import (
    MAX_REL_NS,
    MIN_RATIO,
    N_CLASSES,
    build_levels,
    class_keys,
    duration_class,
)
from profiler_app.traces.arrays import run_starts
from profiler_app.traces.nesting import nest
from profiler_app.traces.store_layout import EVENTS_FILE
from profiler_app.traces.timeline_read import TimelineReader
from profiler_app.traces.utilization import merge_intervals
from tracefmt.kinds import LAUNCH_KINDS, EventKind, of_kinds

INDEX_VERSION = 5
MAX_DEPTH = 63


def store_signature(store_dir: Path) -> str:
    """Changes whenever ingest rewrites the store, so a stale index is rebuilt: the events
    file's size (its time does not survive a copy; indexes built before recorded
    ``<size>-<time>``, read by ``signature_matches``)."""
    return str((store_dir / EVENTS_FILE).stat().st_size)


def signature_matches(recorded: str | None, store_dir: Path) -> bool:
    return (recorded or "").split("-")[0] == store_signature(store_dir)


def _partners(kind: np.ndarray, launch: np.ndarray, order: np.ndarray) -> np.ndarray:
    """For each event (in the index's order, ``order`` its store rows), the position of its
    launch (for a GPU run) or of its first run (for a launch), else -1: the event model's
    ``launch`` (a store row) where it links a launch and a run."""
    n = len(order)
    position = np.empty(n, dtype=np.int32)
    position[order] = np.arange(n, dtype=np.int32)
    linked = np.flatnonzero(launch >= 0)
    other = position[launch[linked]]
    ends = of_kinds(kind, (*LAUNCH_KINDS, *lanes_mod.RUN_KINDS))
    keep = ends[linked] & ends[other]
    partner = np.full(n, -1, dtype=np.int32)
    partner[linked[keep]] = other[keep]
    return partner


class _Pyramids:
    """Activity levels of many subjects (lanes, GPUs), concatenated, with their merged spans.

    Subjects may come in any order and in blocks (``add_block``); ``arrays`` puts them in
    subject order, each subject's levels coarsest first."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.entries: list[np.ndarray] = []  # (subject, k, n buckets) per level
        self.data: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # bucket, count, busy
        self.spans: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # subject, start, end
        self.n_subjects = 0

    def add(self, subject: int, starts: np.ndarray, span_start, span_end) -> None:
        self.add_merged(subject, starts, *merge_intervals(span_start, span_end))

    def add_merged(self, subject: int, starts: np.ndarray, span_start, span_end) -> None:
        """``add`` of spans already sorted and disjoint (such as ``span_union``'s): not merged
        again, so the whole part's levels are built beside one copy of its spans, not two."""
        levels = build_activity(np.sort(starts), span_start, span_end)
        self.add_block(
            np.asarray([(subject, lv.k, len(lv.bucket)) for lv in levels], np.int64).reshape(-1, 3),
            (
                _cat([lv.bucket for lv in levels]),
                _cat([lv.count for lv in levels]),
                _cat([lv.busy_ns for lv in levels]),
            ),
            (np.full(len(span_start), subject, dtype=np.int64), span_start, span_end),
        )

    def add_block(self, entries: np.ndarray, data: tuple, spans: tuple) -> None:
        self.entries.append(entries)
        self.data.append(data)
        self.spans.append(spans)
        if len(entries):
            self.n_subjects = max(self.n_subjects, int(entries[:, 0].max()) + 1)

    def span_union(self) -> tuple[np.ndarray, np.ndarray]:
        """The union of every subject's merged spans so far (the union of their intervals)."""
        _, starts, ends = _transposed(self.spans, 3)
        return merge_intervals(_cat(starts), _cat(ends))

    def arrays(self) -> Iterator[tuple[str, np.ndarray]]:
        """Every subject's levels and spans, an array at a time (each concatenated part is
        dropped once moved, each array once the caller let go of it)."""
        p = self.prefix
        entries = _cat(self.entries).reshape(-1, 3)
        self.entries = []
        # Levels in subject order (stable: coarsest first), their buckets moved with them.
        n = entries[:, 2]
        order = np.argsort(entries[:, 0], kind="stable")
        was_at, n = (np.cumsum(n) - n)[order], n[order]
        now_at = np.cumsum(n) - n
        gather = np.repeat(was_at - now_at, n) + np.arange(int(n.sum()))
        yield f"{p}_table", np.column_stack([entries[order, :2], now_at, n]).astype(np.int64)
        data, self.data = _transposed(self.data, 3), []
        for key, parts in zip(("bucket", "count", "busy"), data, strict=True):
            column = _cat(parts)
            parts.clear()
            yield f"{p}_{key}", column[gather]
            del column
        del gather
        spans, self.spans = _transposed(self.spans, 3), []
        span_subject = _cat(spans[0])
        by_subject = np.argsort(span_subject, kind="stable")
        yield (
            f"{p}_span_off",
            np.searchsorted(span_subject[by_subject], np.arange(self.n_subjects + 1)).astype(
                np.int64
            ),
        )
        del span_subject
        for key, parts in zip(("span_start", "span_end"), spans[1:], strict=True):
            column = _cat(parts)
            parts.clear()
            yield f"{p}_{key}", column[by_subject]
            del column


def _transposed(rows: list[tuple], width: int) -> list[list]:
    return [[row[i] for row in rows] for i in range(width)]


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64, copy=False) if parts else np.empty(0, np.int64)


def _activity_arrays(
    start: np.ndarray,
    dur: np.ndarray,
    kind: np.ndarray,
    device: np.ndarray,
    row_lane: np.ndarray,
    row_off: np.ndarray,
    n_lanes: int,
) -> Iterator[tuple[str, np.ndarray]]:
    """Per lane and for the whole part: events starting and time covered; per GPU: time a
    kernel ran (its utilisation). An array at a time: the lanes' levels are written before
    the GPUs' are built."""
    lanes = _Pyramids("act")
    lane_lo = np.searchsorted(row_lane, np.arange(n_lanes), side="left")
    lane_hi = np.searchsorted(row_lane, np.arange(n_lanes), side="right")
    first, stop = row_off[lane_lo], row_off[lane_hi]
    few = stop - first < ACTIVITY_MIN_RATIO
    lanes.add_block(
        *_few_events_activity(np.flatnonzero(few), first[few], stop[few], start, start + dur)
    )
    for lane in np.flatnonzero(~few).tolist():
        a, b = first[lane], stop[lane]
        lanes.add(lane, start[a:b], start[a:b], start[a:b] + dur[a:b])
    # One more subject, the whole part: what a collapsed process or node draws. Its time
    # covered is the union of the lanes' spans, far fewer than its events.
    lanes.add_merged(n_lanes, start, *lanes.span_union())
    yield from lanes.arrays()
    del lanes
    gpus = _Pyramids("util")
    kernels = np.flatnonzero((kind == EventKind.KERNEL) & (device >= 0))
    devices = np.unique(device[kernels]).astype(np.int64)
    for i, dev in enumerate(devices.tolist()):
        rows = kernels[device[kernels] == dev]
        gpus.add(i, np.empty(0, np.int64), start[rows], start[rows] + dur[rows])
    yield from gpus.arrays()
    yield "util_device", devices


def _merged_per_subject(
    subject: np.ndarray, position: np.ndarray, s: np.ndarray, e: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, subject) of the merged intervals of the events (by subject, then start;
    ``position``: each one's place in its subject): the running reach restarts at each
    subject's first event."""
    reach = e.copy()
    for p in range(1, int(position.max(initial=-1)) + 1):
        at = np.flatnonzero(position == p)
        reach[at] = np.maximum(reach[at - 1], e[at])
    new = position == 0
    new[1:] |= s[1:] > reach[:-1]
    merged_first = np.flatnonzero(new)
    merged_last = np.r_[merged_first[1:] - 1, len(s) - 1][: len(merged_first)]
    return s[merged_first], reach[merged_last], subject[merged_first]


def _few_events_activity(
    subjects: np.ndarray, first: np.ndarray, stop: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, tuple, tuple]:
    """``build_activity`` and ``merge_intervals`` of many subjects at once, as
    ``_Pyramids.add_block`` takes them: each holds the events [first, stop), fewer than
    ``ACTIVITY_MIN_RATIO`` of them (a trace of 200,000 one-event threads has 200,000 such
    lanes). Such a subject keeps only the coarsest level: every finer one has at least one
    entry, so is not ``ACTIVITY_MIN_RATIO`` times smaller than the events."""
    n_each = (stop - first).astype(np.int64)
    total = int(n_each.sum())
    offsets = np.cumsum(n_each) - n_each
    subject = np.repeat(np.arange(len(first)), n_each)
    position = np.arange(total) - np.repeat(offsets, n_each)
    rows = np.repeat(first, n_each) + position
    s, e = start[rows], end[rows]
    order = np.lexsort((s, subject))  # stable, as merge_intervals sorts
    s, e = s[order], e[order]
    span_start, span_end, span_subject = _merged_per_subject(subject, position, s, e)
    # Level MAX_K as ``activity.summarise`` builds it: events starting per bucket, and the
    # merged spans' time per bucket (``utilization.busy_per_bucket``).
    width = 1 << ACTIVITY_MAX_K
    lo, hi = span_start // width, (span_end - 1) // width
    spans = np.maximum(hi - lo + 1, 1)
    piece = np.arange(int(spans.sum())) - np.repeat(np.cumsum(spans) - spans, spans)
    piece_bucket = np.repeat(lo, spans) + piece
    piece_busy = np.maximum(
        np.minimum(np.repeat(span_end, spans), (piece_bucket + 1) * width)
        - np.maximum(np.repeat(span_start, spans), piece_bucket * width),
        0,
    )
    keys_subject = np.r_[subject, np.repeat(span_subject, spans)]
    keys_bucket = np.r_[s >> ACTIVITY_MAX_K, piece_bucket]
    count = np.r_[np.ones(total, np.int64), np.zeros(len(piece_bucket), np.int64)]
    busy = np.r_[np.zeros(total, np.int64), piece_busy]
    by_key = np.lexsort((keys_bucket, keys_subject))
    keys_subject, keys_bucket = keys_subject[by_key], keys_bucket[by_key]
    group = (
        np.flatnonzero(np.r_[True, (np.diff(keys_subject) != 0) | (np.diff(keys_bucket) != 0)])
        if len(by_key)
        else by_key
    )
    bucket = keys_bucket[group]
    count = np.add.reduceat(count[by_key], group) if len(group) else count
    busy = np.add.reduceat(busy[by_key], group) if len(group) else busy
    entries = np.column_stack(
        [
            subjects,
            np.full(len(subjects), ACTIVITY_MAX_K),
            np.diff(np.searchsorted(keys_subject[group], np.arange(len(first) + 1))),
        ]
    ).astype(np.int64)
    return (
        entries,
        (bucket, count, busy),
        (subjects[span_subject], span_start, span_end),
    )


def _level_arrays(rows_off: np.ndarray, start, dur, name) -> dict[str, np.ndarray]:
    table, buckets, counts, busy, names = [], [], [], [], []
    offset = 0
    # A row of fewer than MIN_RATIO events keeps no level (each summarises at least that many).
    for r in np.flatnonzero(np.diff(rows_off) >= MIN_RATIO).tolist():
        a, b = rows_off[r], rows_off[r + 1]
        for level in build_levels(start[a:b], dur[a:b], name[a:b]):
            n = len(level.bucket)
            table.append((r, level.k, offset, n, int(level.terminal)))
            buckets.append(level.bucket)
            counts.append(level.count)
            busy.append(level.busy_ns)
            names.append(level.name)
            offset += n

    def cat(parts: list[np.ndarray], dtype) -> np.ndarray:
        return np.concatenate(parts).astype(dtype) if parts else np.empty(0, dtype)

    return {
        "level_table": np.asarray(table, dtype=np.int64).reshape(-1, 5),
        "level_bucket": cat(buckets, np.int64),
        "level_count": cat(counts, np.int64),
        "level_busy": cat(busy, np.int64),
        "level_name": cat(names, np.int32),
    }


def build_index(store_dir: str | Path, index_dir: str | Path) -> Path:
    """Writes the index of the store in ``store_dir`` to ``index_dir`` (atomically).

    Memory stays a few columns of the part: each column is read alone, and each array of the
    index is written as soon as it is made (a 2.8-million-event part peaked at 935 MB when
    every column and array was held at once)."""
    store_dir, index_dir = Path(store_dir), Path(index_dir)
    hand_back_freed()  # what the steps before freed (see _Staging.save_each)
    reader = TimelineReader(store_dir)
    with _Staging(index_dir) as out:
        kind = reader.column("kind")
        lanes = _lanes(reader, kind)
        start, dur = reader.column("start_ns"), reader.column("dur_ns")
        order, keys, rows_off = _row_order(lanes.event_lane, start, dur)
        lane_table = lanes.table
        del lanes
        start, dur, kind = start[order], dur[order], kind[order]
        name = reader.column("name")[order].astype(np.int32)
        origin = int(start.min()) if len(start) else 0
        if len(start) and int(start.max()) - origin > MAX_REL_NS:
            raise ValueError("a part spanning more than four years cannot be indexed")
        row_lane = (keys // (MAX_DEPTH + 1)).astype(np.int64)
        out.save(
            start=start,
            dur=dur,
            name=name,
            kind=kind,
            row_lane=row_lane,
            row_depth=(keys % (MAX_DEPTH + 1)).astype(np.int64),
            row_off=rows_off,
        )
        out.save(store_row=order.astype(np.int32))
        # The event model's nesting (on the event's thread, whatever lane draws it): the
        # parent's position here (-1: none) and the self time.
        parent = _positions(reader.column("parent")[order], order)
        out.save(parent=parent)
        out.save(**_children(parent))
        del parent
        self_ns = reader.column("self_ns")[order]
        out.save(self_ns=self_ns)
        # Now, while fewer arrays are held than for the levels below.
        blocks = _block_sums(start, dur, name, self_ns)
        out.save(**blocks, **_coarser_sums(blocks, SUPER_BLOCKS))
        del blocks
        del self_ns
        out.save(partner=_partners(kind, reader.column("launch")[order], order))
        out.save(cum=np.r_[0, np.cumsum(dur)].astype(np.int64))
        out.save(**_class_arrays(rows_off, start - origin, dur))
        out.save(**_level_arrays(rows_off, start, dur, name))
        by_name = np.argsort(name, kind="stable")
        out.save(
            name_order=by_name.astype(np.int32),
            name_off=np.searchsorted(name[by_name], np.arange(len(reader.strings) + 1)),
        )
        del by_name, name
        device = reader.column("device")[order]
        del order
        out.save_each(
            _activity_arrays(start, dur, kind, device, row_lane, rows_off, len(lane_table))
        )
        del device, kind
        meta = {
            "version": INDEX_VERSION,
            "signature": store_signature(store_dir),
            "origin_ns": origin,
            "n_events": len(start),
            "n_classes": N_CLASSES,
            "block_events": BLOCK_EVENTS,
            "super_events": BLOCK_EVENTS * SUPER_BLOCKS,
        }
        out.meta(meta, _lane_meta(lane_table, row_lane, rows_off, start, dur))
    del start, dur
    hand_back_freed()
    return index_dir


# Events (in index order) a block of the range totals' sums covers. A range reads up to two
# blocks' events one by one at each end of each row: on 16 ranks of 636k events, 40 random
# ranges' p95 is 62 ms with 512-event blocks, 102 ms with 4,096 (the sums are 6x larger,
# 0.2 MB). An index keeps the size it was built with (``block_events`` in its meta).
BLOCK_EVENTS = 1 << 9
# Blocks a super-block's sums (``sup_*``, the same per name) cover: a range wide enough to hold
# whole super-blocks adds those, so its work grows with its edges, not its width (16 parts of
# 6.3M events: the widest ranges gathered 160 ms of per-block sums). Blocks at its edges, then
# events, as before.
SUPER_BLOCKS = 1 << 6
_BLOCK_COLUMNS = ("blk_name", "blk_count", "blk_total", "blk_self", "blk_min", "blk_max")
# Blocks summed at once: bounds the working arrays to a million events.
_BLOCKS_AT_ONCE = (1 << 20) // BLOCK_EVENTS


def _block_sums(
    start: np.ndarray, dur: np.ndarray, name: np.ndarray, self_ns: np.ndarray
) -> dict[str, np.ndarray]:
    """Per block of ``BLOCK_EVENTS`` events and name: count, summed duration and self time,
    shortest and longest (``blk_*``, the block's names at ``blk_off``); and each block's latest
    end. Range totals add a block wholly inside a range from these, not from its events (a
    100M-event job's whole range was 100M events' worth of work)."""
    n = len(start)
    n_blocks = -(-n // BLOCK_EVENTS)
    n_names = int(name.max()) + 1 if n else 1
    empty = np.zeros(0, dtype=np.int64)
    pieces: list[tuple[np.ndarray, ...]] = [(empty.astype(np.int32), *[empty] * 5)]
    per_block = np.zeros(n_blocks, dtype=np.int64)
    blk_end = np.zeros(n_blocks, dtype=np.int64)
    step = BLOCK_EVENTS * _BLOCKS_AT_ONCE
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        d, own = dur[lo:hi].astype(np.int64), self_ns[lo:hi].astype(np.int64)
        blk_end[lo // BLOCK_EVENTS : -(-hi // BLOCK_EVENTS)] = np.maximum.reduceat(
            start[lo:hi] + d, np.arange(0, hi - lo, BLOCK_EVENTS)
        )
        key = (np.arange(lo, hi, dtype=np.int64) // BLOCK_EVENTS) * n_names + name[lo:hi]
        order = np.lexsort((d, key))  # by block and name, the shortest first
        key, d, own = key[order], d[order], own[order]
        first = run_starts(key)
        last = np.r_[first[1:], len(key)] - 1
        block = key[first] // n_names
        per_block += np.bincount(block, minlength=n_blocks)
        pieces.append(
            (
                (key[first] % n_names).astype(np.int32),
                np.diff(np.r_[first, len(key)]).astype(np.int64),
                np.add.reduceat(d, first),
                np.add.reduceat(own, first),
                d[first],
                d[last],
            )
        )
    columns = [np.concatenate(column) for column in zip(*pieces, strict=True)]
    return {
        "blk_end": blk_end,
        "blk_off": np.r_[0, np.cumsum(per_block)].astype(np.int64),
        **dict(zip(_BLOCK_COLUMNS, columns, strict=True)),
    }


def _coarser_sums(blocks: dict[str, np.ndarray], factor: int) -> dict[str, np.ndarray]:
    """``_block_sums`` of blocks ``factor`` times larger (``sup_*``), added up from ``blocks``':
    per super-block and name the counts and sums add, the extremes are the blocks'."""
    n_blocks = len(blocks["blk_end"])
    n_super = -(-n_blocks // factor)
    names = blocks["blk_name"].astype(np.int64)
    n_names = int(names.max()) + 1 if len(names) else 1
    block_of = np.repeat(np.arange(n_blocks, dtype=np.int64), np.diff(blocks["blk_off"]))
    key = (block_of // factor) * n_names + names  # in super-block order already
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = run_starts(key)
    per_super = np.bincount(key[first] // n_names, minlength=n_super) if len(key) else key

    def summed(column: str, how) -> np.ndarray:
        values = blocks[column][order]
        return how.reduceat(values, first) if len(values) else values

    ends = blocks["blk_end"]
    return {
        "sup_end": np.maximum.reduceat(ends, np.arange(0, n_blocks, factor)) if n_blocks else ends,
        "sup_off": np.r_[0, np.cumsum(per_super)].astype(np.int64),
        "sup_name": (key[first] % n_names).astype(np.int32),
        "sup_count": summed("blk_count", np.add),
        "sup_total": summed("blk_total", np.add),
        "sup_self": summed("blk_self", np.add),
        "sup_min": summed("blk_min", np.minimum),
        "sup_max": summed("blk_max", np.maximum),
    }


def _lanes(reader: TimelineReader, kind: np.ndarray) -> lanes_mod.Lanes:
    track = reader.column("track")
    devices = lanes_mod.launch_devices(
        track, kind, reader.column("launch"), reader.column("device")
    )
    return lanes_mod.assign_lanes(reader.tracks, track, kind, devices)


# Lanes nested together: nesting takes about ten working arrays of its events.
_NEST_EVENTS = 1 << 18


def _row_order(
    event_lane: np.ndarray, start: np.ndarray, dur: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The index's order of the store's events: by row (a lane's nesting depth), then start,
    the longer first among equal starts; with each row's key (lane, depth) and offset.

    The store is already in that order within a track (``event_model.store_order``) and a
    lane is part of one track, so stable sorts by lane and then by row give it; lanes are
    nested a batch at a time."""
    by_lane = np.argsort(event_lane, kind="stable")
    lane = event_lane[by_lane]
    depth = np.empty(len(lane), dtype=np.int8)
    lane_first = run_starts(lane)
    batch_first = [0]
    for first in lane_first.tolist():
        if first - batch_first[-1] >= _NEST_EVENTS:
            batch_first.append(first)
    for a, b in zip(batch_first, [*batch_first[1:], len(lane)], strict=True):
        rows = by_lane[a:b]
        s = start[rows]
        depth[a:b] = np.minimum(nest(lane[a:b], s, s + dur[rows])[1], MAX_DEPTH)
    row_key = lane.astype(np.int64)
    row_key *= MAX_DEPTH + 1
    row_key += depth
    del lane, depth
    by_row = np.argsort(row_key, kind="stable")
    row_key = row_key[by_row]
    order = by_lane[by_row]
    del by_lane, by_row
    row_first = run_starts(row_key)
    return order, row_key[row_first], np.r_[row_first, len(order)].astype(np.int64)


def _class_arrays(rows_off: np.ndarray, rel_start: np.ndarray, dur: np.ndarray) -> dict:
    """``ckey``/``cidx``: each row's events by (duration class, start)."""
    ckey = class_keys(duration_class(dur), rel_start)
    del rel_start
    row_of = np.repeat(np.arange(len(rows_off) - 1, dtype=np.int32), np.diff(rows_off))
    by_class = np.lexsort((ckey, row_of))
    del row_of
    return {"ckey": ckey[by_class], "cidx": by_class.astype(np.int32)}


def _positions(store_rows: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Index positions of store rows (-1 stays -1); ``order`` maps positions to store rows."""
    where = np.empty(len(order), dtype=np.int32 if len(order) < 2**31 else np.int64)
    where[order] = np.arange(len(order), dtype=where.dtype)
    positions = np.full(len(order), -1, dtype=np.int64)
    known = store_rows >= 0
    positions[known] = where[store_rows[known]]
    return positions


def _children(parent: np.ndarray) -> dict[str, np.ndarray]:
    """Each event's children: the positions of the events with a parent, by parent
    (``child_order``), and those parents (``child_parent``, sorted: a binary search finds an
    event's children without reading every event's parent)."""
    dtype = np.int32 if len(parent) < 2**31 else np.int64
    narrow = parent.astype(dtype)
    by_parent = np.argsort(narrow, kind="stable")
    parents = narrow[by_parent]
    del narrow
    orphans = int(np.searchsorted(parents, 0))  # parent -1 sorts first
    return {"child_order": by_parent[orphans:].astype(dtype), "child_parent": parents[orphans:]}


def _lane_meta(
    table: pd.DataFrame, row_lane: np.ndarray, off: np.ndarray, start, dur
) -> Iterator[dict]:
    """Per lane of ``table``: its rows (contiguous: rows sort by lane) and events' extent."""
    lane = table["lane"].to_numpy().astype(np.int64)
    row_lo = np.searchsorted(row_lane, lane, side="left")
    row_hi = np.searchsorted(row_lane, lane, side="right")
    lo, hi = off[row_lo], off[row_hi]
    start_ns = np.minimum.reduceat(start, lo) if len(lo) else lo
    end_ns = np.maximum.reduceat(start + dur, lo) if len(lo) else lo
    columns = ("lane", "kind", "device", "stream", "pid", "tid", "label")
    ints = ("lane", "device", "stream", "pid", "tid")
    values = [
        table[c].to_numpy().astype(np.int64).tolist() if c in ints else table[c].tolist()
        for c in columns
    ]
    return (
        {
            **dict(zip(columns, lane_values, strict=True)),
            "rows": list(range(a, b)),
            "n_events": n,
            "start_ns": first_ns,
            "end_ns": last_ns,
        }
        for lane_values, a, b, n, first_ns, last_ns in zip(
            zip(*values, strict=True),
            row_lo.tolist(),
            row_hi.tolist(),
            (hi - lo).tolist(),
            start_ns.tolist(),
            end_ns.tolist(),
            strict=True,
        )
    )


def save_npy(path: Path, array: np.ndarray) -> None:
    """``np.save``, its bytes written by Python's file: numpy's own write reports a refused
    write as "N requested and M written", without the system's reason, so a full disk would
    read as an unexpected problem rather than ENOSPC."""
    array = np.ascontiguousarray(array)
    with path.open("wb") as out:
        np.lib.format.write_array_header_1_0(out, np.lib.format.header_data_from_array_1_0(array))
        out.write(array.reshape(-1).view(np.uint8).data)


class _Staging:
    """The index written into a sibling folder, an array at a time, then swapped in, so
    readers never see half an index."""

    def __init__(self, index_dir: Path) -> None:
        self.index_dir = index_dir
        self.folder = index_dir.with_name(f".{index_dir.name}-{uuid.uuid4().hex}")

    def __enter__(self) -> _Staging:
        self.folder.mkdir(parents=True)
        return self

    def save(self, **arrays: np.ndarray) -> None:
        self.save_each(arrays.items())

    def save_each(self, arrays: Iterable[tuple[str, np.ndarray]]) -> None:
        """Writes (name, array) pairs as they come: from a generator, each array is freed
        before the next is made. Then what the step that made them freed goes back to the
        system, so that the next step's columns come on top of what is held, not of what was
        (a 2.8-million-event part's ingest peaked 40 MB lower)."""
        for key, value in arrays:
            save_npy(self.folder / f"{key}.npy", value)
            del value
        hand_back_freed()

    def meta(self, meta: dict, lanes: Iterator[dict]) -> None:
        """``meta.json``: ``meta`` and its ``lanes`` list, written a few thousand lanes at a
        time (a trace of 200,000 threads has as many lanes: their dicts would take 0.3 GB)."""
        with (self.folder / "meta.json").open("w") as out:
            out.write(json.dumps(meta)[:-1] + ', "lanes": [')
            separator = ""
            while batch := list(islice(lanes, 4096)):
                out.write(separator + json.dumps(batch)[1:-1])
                separator = ", "
            out.write("]}")

    def __exit__(self, error_type, error, traceback) -> None:
        try:
            if error_type is None:
                if self.index_dir.exists():
                    retired = self.index_dir.with_name(
                        f".{self.index_dir.name}-old-{uuid.uuid4().hex}"
                    )
                    os.replace(self.index_dir, retired)
                    shutil.rmtree(retired, ignore_errors=True)
                os.replace(self.folder, self.index_dir)
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
