"""Build the timeline index of one part from its timeline store (see ``index`` for the layout).

Run by the worker once per part, right after the ingest wrote the store and before the part is
done (or by the sweep, for stores from before): it reads the store's events once, assigns lanes
and nesting depths, and writes flat ``.npy`` arrays that the web process memory-maps.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import numpy as np
import pandas as pd

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
from profiler_app.traces.nesting import nest
from profiler_app.traces.timeline_read import TimelineReader
from profiler_app.traces.utilization import merge_intervals
from tracefmt.kinds import EventKind

INDEX_VERSION = 4
MAX_DEPTH = 63
_COLUMNS = [
    "track",
    "kind",
    "name",
    "start_ns",
    "dur_ns",
    "correlation",
    "device",
    "parent",
    "self_ns",
]


def store_signature(store_dir: Path) -> str:
    """Changes whenever ingest rewrites the store, so a stale index is rebuilt: the events
    file's size (its time does not survive a copy; indexes built before recorded
    ``<size>-<time>``, read by ``signature_matches``)."""
    return str((store_dir / "events.parquet").stat().st_size)


def signature_matches(recorded: str | None, store_dir: Path) -> bool:
    return (recorded or "").split("-")[0] == store_signature(store_dir)


def _partners(kind: np.ndarray, correlation: np.ndarray) -> np.ndarray:
    """For each event, the index of its launch (for a GPU run) or run (for a launch), else -1."""
    partner = np.full(len(kind), -1, dtype=np.int32)
    launch = np.flatnonzero(np.isin(kind, lanes_mod.LAUNCH_KINDS) & (correlation >= 0))
    run = np.flatnonzero(np.isin(kind, lanes_mod.RUN_KINDS) & (correlation >= 0))
    if not len(launch) or not len(run):
        return partner
    run = run[np.argsort(correlation[run], kind="stable")]
    at = np.searchsorted(correlation[run], correlation[launch])
    ok = at < len(run)
    ok[ok] = correlation[run][at[ok]] == correlation[launch][ok]
    partner[launch[ok]] = run[at[ok]]
    partner[run[at[ok]]] = launch[ok]
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
        merged = merge_intervals(span_start, span_end)
        levels = build_activity(np.sort(starts), *merged)
        self.add_block(
            np.asarray([(subject, lv.k, len(lv.bucket)) for lv in levels], np.int64).reshape(-1, 3),
            (
                _cat([lv.bucket for lv in levels]),
                _cat([lv.count for lv in levels]),
                _cat([lv.busy_ns for lv in levels]),
            ),
            (np.full(len(merged[0]), subject, dtype=np.int64), *merged),
        )

    def add_block(self, entries: np.ndarray, data: tuple, spans: tuple) -> None:
        self.entries.append(entries)
        self.data.append(data)
        self.spans.append(spans)
        if len(entries):
            self.n_subjects = max(self.n_subjects, int(entries[:, 0].max()) + 1)

    def arrays(self) -> dict[str, np.ndarray]:
        p = self.prefix
        entries = _cat(self.entries).reshape(-1, 3)
        bucket, count, busy = (_cat([d[i] for d in self.data]) for i in range(3))
        span_subject, span_start, span_end = (_cat([s[i] for s in self.spans]) for i in range(3))
        # Levels in subject order (stable: coarsest first), their buckets moved with them.
        n = entries[:, 2]
        order = np.argsort(entries[:, 0], kind="stable")
        was_at, n = (np.cumsum(n) - n)[order], n[order]
        now_at = np.cumsum(n) - n
        gather = np.repeat(was_at - now_at, n) + np.arange(int(n.sum()))
        by_subject = np.argsort(span_subject, kind="stable")
        span_off = np.searchsorted(span_subject[by_subject], np.arange(self.n_subjects + 1))
        return {
            f"{p}_table": np.column_stack([entries[order, :2], now_at, n]).astype(np.int64),
            f"{p}_bucket": bucket[gather],
            f"{p}_count": count[gather],
            f"{p}_busy": busy[gather],
            f"{p}_span_off": span_off.astype(np.int64),
            f"{p}_span_start": span_start[by_subject],
            f"{p}_span_end": span_end[by_subject],
        }


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.empty(0, np.int64)


def _activity_arrays(arrays: dict[str, np.ndarray], n_lanes: int, device) -> dict[str, np.ndarray]:
    """Per lane and for the whole part: events starting and time covered; per GPU: time a
    kernel ran (its utilisation)."""
    start, dur, kind = arrays["start"], arrays["dur"], arrays["kind"]
    lanes = _Pyramids("act")
    row_off, row_lane = arrays["row_off"], arrays["row_lane"]
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
    # One more subject, the whole part: what a collapsed process or node draws.
    lanes.add(n_lanes, start, start, start + dur)
    gpus = _Pyramids("util")
    kernels = np.flatnonzero((kind == EventKind.KERNEL) & (device >= 0))
    devices = np.unique(device[kernels]).astype(np.int64)
    for i, dev in enumerate(devices.tolist()):
        rows = kernels[device[kernels] == dev]
        gpus.add(i, np.empty(0, np.int64), start[rows], start[rows] + dur[rows])
    return {**lanes.arrays(), **gpus.arrays(), "util_device": devices}


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
    # Merged intervals per subject: the running reach restarts at each subject's first event.
    reach = e.copy()
    for p in range(1, int(n_each.max(initial=0))):
        at = np.flatnonzero(position == p)
        reach[at] = np.maximum(reach[at - 1], e[at])
    new = position == 0
    new[1:] |= s[1:] > reach[:-1]
    merged_first = np.flatnonzero(new)
    merged_last = np.r_[merged_first[1:] - 1, total - 1][: len(merged_first)]
    span_start, span_end = s[merged_first], reach[merged_last]
    span_subject = subject[merged_first]
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
    """Writes the index of the store in ``store_dir`` to ``index_dir`` (atomically)."""
    store_dir, index_dir = Path(store_dir), Path(index_dir)
    reader = TimelineReader(store_dir)
    table = reader.read_all(_COLUMNS)
    c = {col: table.column(col).to_numpy() for col in _COLUMNS}
    del table
    end = c["start_ns"] + c["dur_ns"]
    devices = lanes_mod.launch_devices(c["track"], c["kind"], c["correlation"], c["device"])
    lanes = lanes_mod.assign_lanes(reader.tracks, c["track"], c["kind"], devices)
    lane = lanes.event_lane.astype(np.int64)

    # A lane draws its events stacked as they nest in it (a thread's runtime calls have a
    # lane of their own, so they sit at its top).
    depth = np.minimum(nest(lane, c["start_ns"], end)[1], MAX_DEPTH)
    del end
    row_key = lane * (MAX_DEPTH + 1) + depth
    del lane, depth
    order = np.lexsort((-c["dur_ns"], c["start_ns"], row_key))
    keys, row_first = np.unique(row_key[order], return_index=True)
    del row_key
    rows_off = np.r_[row_first, len(order)].astype(np.int64)
    row_of = np.repeat(np.arange(len(keys)), np.diff(rows_off))

    # Each column is dropped once reordered: an 18-million-event part has 144 MB a column.
    start, dur = c.pop("start_ns")[order], c.pop("dur_ns")[order]
    name, kind = c.pop("name")[order].astype(np.int32), c.pop("kind")[order]
    origin = int(start.min()) if len(start) else 0
    if len(start) and int(start.max()) - origin > MAX_REL_NS:
        raise ValueError("a part spanning more than four years cannot be indexed")
    ckey = class_keys(duration_class(dur), start - origin)
    by_class = np.lexsort((ckey, row_of))
    del row_of
    arrays: dict[str, np.ndarray] = {
        "start": start,
        "dur": dur,
        "name": name,
        "kind": kind,
        "store_row": order.astype(np.int32),
        # The event model's nesting (on the event's thread, whatever lane draws it): the
        # parent's position here (-1: none) and the self time.
        "parent": _positions(c.pop("parent")[order], order),
        "self_ns": c.pop("self_ns")[order],
        "cum": np.r_[0, np.cumsum(dur)].astype(np.int64),
        "partner": _partners(kind, c.pop("correlation")[order]),
        "row_lane": (keys // (MAX_DEPTH + 1)).astype(np.int64),
        "row_depth": (keys % (MAX_DEPTH + 1)).astype(np.int64),
        "row_off": rows_off,
        "ckey": ckey[by_class],
        "cidx": by_class.astype(np.int32),
    }
    del ckey, by_class
    arrays.update(_level_arrays(rows_off, start, dur, name))
    arrays.update(_activity_arrays(arrays, len(lanes.table), c.pop("device")[order]))
    del c, order
    by_name = np.argsort(name, kind="stable")
    arrays["name_order"] = by_name.astype(np.int32)
    arrays["name_off"] = np.searchsorted(name[by_name], np.arange(len(reader.strings) + 1))
    meta = {
        "version": INDEX_VERSION,
        "signature": store_signature(store_dir),
        "origin_ns": origin,
        "n_events": len(start),
        "n_classes": N_CLASSES,
    }
    _write(index_dir, arrays, meta, _lane_meta(lanes.table, arrays, start, dur))
    return index_dir


def _positions(store_rows: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Index positions of store rows (-1 stays -1); ``order`` maps positions to store rows."""
    where = np.empty(len(order), dtype=np.int64)
    where[order] = np.arange(len(order))
    return np.where(store_rows >= 0, where[np.maximum(store_rows, 0)], -1).astype(np.int64)


def _lane_meta(table: pd.DataFrame, arrays: dict[str, np.ndarray], start, dur) -> Iterator[dict]:
    """Per lane of ``table``: its rows (contiguous: rows sort by lane) and events' extent."""
    off, row_lane = arrays["row_off"], arrays["row_lane"]
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


def _write(
    index_dir: Path, arrays: dict[str, np.ndarray], meta: dict, lanes: Iterator[dict]
) -> None:
    """Write to a sibling folder, then swap it in, so readers never see half an index.
    ``meta.json`` gets ``meta`` and its ``lanes`` list, written a few thousand lanes at a time
    (a trace of 200,000 threads has as many lanes: their dicts together would take 0.3 GB)."""
    staging = index_dir.with_name(f".{index_dir.name}-{uuid.uuid4().hex}")
    staging.mkdir(parents=True)
    try:
        for key, value in arrays.items():
            np.save(staging / f"{key}.npy", np.ascontiguousarray(value))
        with (staging / "meta.json").open("w") as out:
            out.write(json.dumps(meta)[:-1] + ', "lanes": [')
            separator = ""
            while batch := list(islice(lanes, 4096)):
                out.write(separator + json.dumps(batch)[1:-1])
                separator = ", "
            out.write("]}")
        if index_dir.exists():
            retired = index_dir.with_name(f".{index_dir.name}-old-{uuid.uuid4().hex}")
            os.replace(index_dir, retired)
            shutil.rmtree(retired, ignore_errors=True)
        os.replace(staging, index_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
