"""Writing the events of one part's timeline store (``traces.store_layout`` names its files):

    events.parquet      every event, all model columns, sorted by (track, start_ns)
    tracks.parquet      one row per track: label, first row, row count, time range, longest
    strings.parquet     the part's interned strings (``name`` and other string columns)

Writing never holds the whole part: batches are sorted and spilled as Arrow IPC "runs" of at
most ``run_rows`` events, and ``finish`` merges the runs in bounded windows. Windows run across
tracks, so a track costs one row of ``tracks.parquet`` and nothing more: a trace of 200,000
one-event threads is as cheap as one thread of 200,000 events.

Row groups (``row_group_sizes``) follow the tracks: a track's events start a group of their own
unless they are few, so a group covers a short stretch of one track's time and its start_ns
min/max lets a reader of a time range (the SQL console's DuckDB) skip the groups outside it.
Stores written before hold groups that run across tracks; they read the same, only slower.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from profiler_app.traces.arrays import run_starts
from profiler_app.traces.correlation import copies_sized_by_calls
from profiler_app.traces.event_model import (
    MODEL_COLUMNS,
    MODEL_INPUT_COLUMNS,
    MODEL_SCHEMA,
    EventModel,
    FactGatherer,
    PartFacts,
    Windows,
    build_event_model,
    free_rows,
    store_order,
)
from profiler_app.traces.kineto_args import size_copies
from profiler_app.traces.model import EventBatch
from profiler_app.traces.spill_runs import STORE_ORDER, Run, merge_runs, write_run
from profiler_app.traces.store_layout import EVENTS_FILE, SPILL_FOLDER, STRINGS_FILE, TRACKS_FILE
from tracefmt.columns import EVENT_COLUMNS

ROW_GROUP_ROWS = 65536
# Measured on the shared traces: LZ4 without dictionary pages writes 2x faster than the
# default (Snappy + dictionaries) and the files come out no larger.
PARQUET_OPTIONS = {"compression": "lz4", "use_dictionary": False}
# Events written per window, one row group: the merge holds a few windows of all columns.
_WINDOW_ROWS = ROW_GROUP_ROWS

EVENT_SCHEMA = pa.schema(
    [(c, pa.from_numpy_dtype(np.dtype(t))) for c, (t, _) in EVENT_COLUMNS.items()]
)
# What ``events.parquet`` holds: every input format's columns, then the event model's.
STORE_SCHEMA = pa.schema([*EVENT_SCHEMA, *MODEL_SCHEMA])
_TRACK = EVENT_SCHEMA.get_field_index("track")
_START = EVENT_SCHEMA.get_field_index("start_ns")
_DUR = EVENT_SCHEMA.get_field_index("dur_ns")
_BYTES = EVENT_SCHEMA.get_field_index("bytes")
_BANDWIDTH = EVENT_SCHEMA.get_field_index("bandwidth_gbps")
# Read at finish: the event model's input, and the copy sizes.
_FINISH_INPUT = (*MODEL_INPUT_COLUMNS, "bytes")


@dataclass(frozen=True)
class StoreSummary:
    directory: Path
    n_events: int
    tracks: pd.DataFrame  # track, first_row, n_rows, start_ns, end_ns, max_dur_ns (+ labels)
    captured_step_starts: np.ndarray  # start of each step Kineto recorded (the event model's)
    # Where the complete steps end (``traces.window``); None: the part is whole in both.
    complete_steps_end_ns: int | None = None


def add_event_model(directory: str | Path, strings: list[str]) -> None:
    """Adds the event model's columns a store written before them lacks (rewritten row group by
    row group); the columns it has are kept. Its parts were recorded whole
    (``traces.event_model``). Only the store sweep calls this: a reader never writes a store."""
    path = Path(directory) / EVENTS_FILE
    events = pq.ParquetFile(path, memory_map=True)
    own = events.schema_arrow.names
    missing = [name for name in MODEL_COLUMNS if name not in own]
    if not missing:
        return
    table = events.read(columns=list(MODEL_INPUT_COLUMNS), use_threads=False)
    model = build_event_model({c: table.column(c).to_numpy() for c in MODEL_INPUT_COLUMNS}, strings)
    del table
    staging = path.with_name(f".{path.name}.model")
    with pq.ParquetWriter(staging, STORE_SCHEMA, **PARQUET_OPTIONS) as writer:
        first = 0
        for group in range(events.metadata.num_row_groups):
            table = events.read_row_group(group, use_threads=False)
            rows = slice(first, first + table.num_rows)
            for name in missing:
                table = table.append_column(MODEL_SCHEMA.field(name), pa.array(model[name][rows]))
            writer.write_table(
                table.select(STORE_SCHEMA.names), row_group_size=max(table.num_rows, 1)
            )
            first += table.num_rows
    os.replace(staging, path)


class TimelineWriter:
    # A run of 131,072 events is ~20 MB of columns (and as much again while it is sorted).
    def __init__(self, directory: str | Path, run_rows: int = 131_072) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.spill = self.directory / SPILL_FOLDER
        self.run_rows = run_rows
        self._buffer: list[dict[str, np.ndarray]] = []
        self._buffered = 0
        self._runs: list[Run] = []
        self._max_track = -1

    def add(self, batch: EventBatch) -> None:
        if not len(batch):
            return
        self._buffer.append(batch.columns)
        self._buffered += len(batch)
        self._max_track = max(self._max_track, int(batch.columns["track"].max()))
        if self._buffered >= self.run_rows:
            self._spill()

    def _sorted_buffer(self) -> pa.Table:
        """The buffered events in store order (``store_order``)."""
        order = store_order(*(np.concatenate([b[c] for b in self._buffer]) for c in STORE_ORDER))
        arrays = []
        for col in EVENT_COLUMNS:
            column = np.concatenate([b[col] for b in self._buffer])
            arrays.append(pa.array(column[order]))
            del column
        self._buffer, self._buffered = [], 0
        return pa.Table.from_arrays(arrays, schema=EVENT_SCHEMA)

    def _spill(self) -> None:
        if not self._buffer:
            return
        table = self._sorted_buffer()
        self.spill.mkdir(exist_ok=True)
        path = self.spill / f"run-{len(self._runs):05d}.arrow"
        self._runs.append(write_run(path, table))

    def _windows(self) -> Iterator[pa.Table]:
        """All events in store order, in bounded windows."""
        if not self._runs:
            # Everything fit in one run: sort it in memory, no spill files.
            table = self._sorted_buffer() if self._buffer else EVENT_SCHEMA.empty_table()
            return (table.slice(f, _WINDOW_ROWS) for f in range(0, table.num_rows, _WINDOW_ROWS))
        self._spill()
        return merge_runs(self._runs, _WINDOW_ROWS)

    def _facts(self, strings: list[str], offset_ns: int) -> PartFacts:
        """The part's facts (``event_model.PartFacts``), gathered from its events in store
        order, so that each one knows its store row: the spilled runs merged on the few
        columns the facts read, or what is buffered, sorted."""
        gatherer = FactGatherer(strings)
        if self._runs:
            self._spill()
            first = 0
            # Few columns: windows four times as long cost what the final merge's hold, in a
            # quarter of the rounds.
            merged = merge_runs(self._runs, 4 * _WINDOW_ROWS, columns=_FINISH_INPUT)
            for window in merged:
                gatherer.add({c: window.column(c).to_numpy() for c in _FINISH_INPUT}, first)
                first += window.num_rows
        elif self._buffer:
            c = {k: np.concatenate([b[k] for b in self._buffer]) for k in _FINISH_INPUT}
            order = store_order(c["track"], c["start_ns"], c["dur_ns"])
            gatherer.add({k: a[order] for k, a in c.items()}, 0)
        return gatherer.facts(offset_ns)

    def finish(
        self,
        offset_ns: int,
        strings: list[str],
        track_labels: pd.DataFrame,
        captured_windows_ns: Windows = None,
    ) -> StoreSummary:
        """Merge the runs into the final files, with the event model's columns
        (``traces.event_model``: ``captured_windows_ns`` as it takes them); ``offset_ns`` moves
        times onto the unix epoch. Nothing here holds more than a few windows of events."""
        stats = _TrackStats(self._max_track + 1)
        facts = self._facts(strings, offset_ns)
        model = EventModel(strings, facts, captured_windows_ns)
        captured_steps = []
        written = 0
        pending: list[pa.Table] = []  # segments not yet written: one row group of them
        with pq.ParquetWriter(
            self.directory / EVENTS_FILE, STORE_SCHEMA, **PARQUET_OPTIONS
        ) as events:
            for segment in _segments(self._windows()):
                segment = _shifted(segment, offset_ns)
                columns = {c: segment.column(c).to_numpy() for c in _FINISH_INPUT}
                # A copy whose sizing call was decoded in another slice of the file gets its
                # size now.
                segment = _sized_copies(segment, columns, facts)
                rows = model.columns(columns, written)
                captured_steps.append(columns["start_ns"][rows["is_step"] & rows["captured"]])
                for name in MODEL_COLUMNS:
                    segment = segment.append_column(MODEL_SCHEMA.field(name), pa.array(rows[name]))
                stats.add(segment)
                written += segment.num_rows
                # Segments end where nothing is open, often every few thousand events: written
                # one by one they made thousands of row groups, whose footer every reader parses.
                pending = _write_groups(events, [*pending, segment])
            _write_groups(events, pending, last=True)
        # A part may hold samples but no events (a chunk cut before any annotation ended).
        tracks = stats.frame().merge(track_labels, on="track", how="left")
        pq.write_table(
            pa.Table.from_pandas(tracks, preserve_index=False), self.directory / TRACKS_FILE
        )
        pq.write_table(
            pa.table({"value": pa.array(strings, pa.string())}), self.directory / STRINGS_FILE
        )
        shutil.rmtree(self.spill, ignore_errors=True)
        steps = np.concatenate(captured_steps) if captured_steps else np.zeros(0, dtype=np.int64)
        return StoreSummary(
            self.directory, int(stats.n_rows.sum()), tracks, steps, facts.complete_steps_end_ns
        )


def row_group_sizes(track: np.ndarray) -> list[int]:
    """The row groups of rows in store order: each track's rows cut into pieces of
    ``ROW_GROUP_ROWS`` (the last one shorter); a piece of at least an eighth of that is a group
    of its own, and smaller pieces (small tracks, the ends of large ones) share groups. A group
    of one track spans only that stretch of its time; a shared group may span the whole part,
    but it holds only the events of small pieces."""
    if not len(track):
        return []
    full, few = ROW_GROUP_ROWS, max(ROW_GROUP_ROWS // 8, 1)
    ends = np.flatnonzero(np.diff(track)) + 1
    sizes: list[int] = []
    shared = 0  # rows of small pieces waiting for their group's end
    for rows in np.diff(np.r_[0, ends, len(track)]).tolist():
        whole, rest = divmod(rows, full)
        for piece in [full] * whole + ([rest] if rest else []):
            if shared and (piece >= few or shared + piece > full):
                sizes.append(shared)
                shared = 0
            if piece >= few:
                sizes.append(piece)
            else:
                shared += piece
    if shared:
        sizes.append(shared)
    return sizes


def _write_groups(
    writer: pq.ParquetWriter, segments: list[pa.Table], last: bool = False
) -> list[pa.Table]:
    """Writes the segments' rows as row groups (``row_group_sizes``); the last group, which
    the next segments may still extend, waits for them (``last``: is written too). The groups
    come out as they would over the whole part at once: each one left waiting starts where a
    group of the whole part starts."""
    if not segments:
        return []
    table = pa.concat_tables(segments) if len(segments) > 1 else segments[0]
    sizes = row_group_sizes(table.column(_TRACK).to_numpy())
    written = 0
    for size in sizes if last else sizes[:-1]:
        writer.write_table(table.slice(written, size), row_group_size=size)
        written += size
    return [table.slice(written)] if written < table.num_rows else []


def _segments(windows: Iterator[pa.Table]) -> Iterator[pa.Table]:
    """The windows re-cut so that each piece ends where nothing is open on its last track
    (``event_model.free_rows``): the event model nests within one piece. The rows after the
    last such point wait for the next window."""
    carry: pa.Table | None = None
    for window in windows:
        table = pa.concat_tables([carry, window]).combine_chunks() if carry is not None else window
        start = table.column(_START).to_numpy()
        free = free_rows(
            table.column(_TRACK).to_numpy(), start, start + table.column(_DUR).to_numpy()
        )
        cut = int(free[-1]) if len(free) else 0
        if cut == 0:  # one tree so far: wait for its end
            carry = table
            continue
        yield table.slice(0, cut)
        carry = table.slice(cut)
    if carry is not None and carry.num_rows:
        yield carry


def _sized_copies(segment: pa.Table, columns: dict[str, np.ndarray], facts: PartFacts) -> pa.Table:
    """``segment`` with its copies that have no size sized from their runtime call (ROCm),
    wherever in the part that call is."""
    copies, sizes = copies_sized_by_calls(
        columns["kind"], columns["correlation"], columns["bytes"], facts.call_bytes
    )
    if not len(copies):
        return segment
    nbytes = columns["bytes"].copy()
    bandwidth = segment.column(_BANDWIDTH).to_numpy().copy()
    size_copies(nbytes, bandwidth, columns["dur_ns"], copies, sizes)
    segment = segment.set_column(_BYTES, "bytes", pa.array(nbytes))
    return segment.set_column(_BANDWIDTH, "bandwidth_gbps", pa.array(bandwidth))


def _shifted(window: pa.Table, offset_ns: int) -> pa.Table:
    if not offset_ns:
        return window
    start = window.column(_START).to_numpy() + np.int64(offset_ns)
    return window.set_column(_START, "start_ns", pa.array(start))


class _TrackStats:
    """Per track: row count, time range and longest event, from windows in store order."""

    def __init__(self, n_tracks: int) -> None:
        self.n_rows = np.zeros(n_tracks, dtype=np.int64)
        self.start_ns = np.zeros(n_tracks, dtype=np.int64)
        self.end_ns = np.zeros(n_tracks, dtype=np.int64)
        self.max_dur_ns = np.zeros(n_tracks, dtype=np.int64)

    def add(self, window: pa.Table) -> None:
        if not window.num_rows:
            return
        track = window.column("track").to_numpy()
        start = window.column("start_ns").to_numpy()
        dur = window.column("dur_ns").to_numpy()
        first = run_starts(track)
        ids = track[first].astype(np.int64)
        new = self.n_rows[ids] == 0  # a track's first rows: its earliest start
        self.start_ns[ids[new]] = start[first[new]]
        self.end_ns[ids] = np.maximum(
            np.where(new, np.iinfo(np.int64).min, self.end_ns[ids]),
            np.maximum.reduceat(start + dur, first),
        )
        self.max_dur_ns[ids] = np.maximum(self.max_dur_ns[ids], np.maximum.reduceat(dur, first))
        self.n_rows[ids] += np.diff(np.r_[first, len(track)])

    def frame(self) -> pd.DataFrame:
        """One row per track; an empty track has no time range (NaN)."""
        empty = self.n_rows == 0
        frame = pd.DataFrame(
            {
                "track": np.arange(len(self.n_rows), dtype=np.int64),
                "first_row": np.cumsum(self.n_rows) - self.n_rows,
                "n_rows": self.n_rows,
                "start_ns": self.start_ns,
                "end_ns": self.end_ns,
                "max_dur_ns": self.max_dur_ns,
            }
        )
        if empty.any():
            for column in ("start_ns", "end_ns"):
                frame[column] = frame[column].where(~empty)
        return frame
