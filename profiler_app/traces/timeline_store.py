"""The timeline store of one part: Parquet files sorted by track, then start time.

Layout of a store directory::

    events.parquet      every event, all model columns, sorted by (track, start_ns)
    tracks.parquet      one row per track: label, first row, row count, time range, longest
    strings.parquet     the part's interned strings (``name`` and other string columns)

Writing never holds the whole part: batches are sorted and spilled as Arrow IPC "runs" of at
most ``run_rows`` events, and ``finish`` merges the runs track by track in bounded windows.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from profiler_app.traces.model import EventBatch
from tracefmt.columns import EVENT_COLUMNS

EVENTS_FILE = "events.parquet"
TRACKS_FILE = "tracks.parquet"
STRINGS_FILE = "strings.parquet"
ROW_GROUP_ROWS = 65536
# Measured on the shared traces: LZ4 without dictionary pages writes 2x faster than the
# default (Snappy + dictionaries) and the files come out no larger.
PARQUET_OPTIONS = {"compression": "lz4", "use_dictionary": False}
_RUN_BATCH_ROWS = 16384
_WINDOW_ROWS = 262144

EVENT_SCHEMA = pa.schema(
    [(c, pa.from_numpy_dtype(np.dtype(t))) for c, (t, _) in EVENT_COLUMNS.items()]
)
_START = EVENT_SCHEMA.get_field_index("start_ns")


@dataclass(frozen=True)
class StoreSummary:
    directory: Path
    n_events: int
    tracks: pd.DataFrame  # track, first_row, n_rows, start_ns, end_ns, max_dur_ns (+ labels)


@dataclass
class _Run:
    path: Path
    track_bounds: np.ndarray  # row where each track id starts in this run (len = tracks + 1)
    batch_rows: int


class TimelineWriter:
    def __init__(self, directory: str | Path, run_rows: int = 400_000) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.spill = self.directory / "runs"
        self.run_rows = run_rows
        self._buffer: list[dict[str, np.ndarray]] = []
        self._buffered = 0
        self._runs: list[_Run] = []
        self._max_track = -1

    def add(self, batch: EventBatch) -> None:
        if not len(batch):
            return
        self._buffer.append(batch.columns)
        self._buffered += len(batch)
        self._max_track = max(self._max_track, int(batch.columns["track"].max()))
        if self._buffered >= self.run_rows:
            self._spill()

    def _sorted_buffer(self) -> tuple[pa.Table, np.ndarray]:
        """The buffered events sorted by (track, start), and where each track begins."""
        track = np.concatenate([b["track"] for b in self._buffer])
        start = np.concatenate([b["start_ns"] for b in self._buffer])
        order = np.lexsort((start, track))
        del start
        arrays = []
        for col in EVENT_COLUMNS:
            column = np.concatenate([b[col] for b in self._buffer])
            arrays.append(pa.array(column[order]))
            del column
        self._buffer, self._buffered = [], 0
        bounds = np.searchsorted(track[order], np.arange(self._max_track + 2), side="left")
        return pa.Table.from_arrays(arrays, schema=EVENT_SCHEMA), bounds

    def _spill(self) -> None:
        if not self._buffer:
            return
        table, bounds = self._sorted_buffer()
        self.spill.mkdir(exist_ok=True)
        path = self.spill / f"run-{len(self._runs):05d}.arrow"
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, EVENT_SCHEMA) as writer:
            writer.write_table(table, max_chunksize=_RUN_BATCH_ROWS)
        self._runs.append(_Run(path, bounds, _RUN_BATCH_ROWS))

    def _windows(self) -> Iterator[tuple[int, Iterator[pa.Table]]]:
        """Per track, its events in start order, in bounded windows."""
        n_tracks = self._max_track + 1
        if not self._runs:
            # Everything fit in one run: sort it in memory, no spill files.
            if self._buffer:
                table, bounds = self._sorted_buffer()
                for track in range(n_tracks):
                    yield track, _slices(table, int(bounds[track]), int(bounds[track + 1]))
            return
        self._spill()
        for run in self._runs:  # runs spilled before later tracks appeared
            run.track_bounds = np.r_[
                run.track_bounds,
                np.repeat(run.track_bounds[-1], n_tracks + 1 - len(run.track_bounds)),
            ]
        for track in range(n_tracks):
            yield track, _merge_track(self._runs, track)

    def finish(
        self, offset_ns: int, strings: list[str], track_labels: pd.DataFrame
    ) -> StoreSummary:
        """Merge the runs into the final files; ``offset_ns`` moves times onto the unix epoch."""
        track_rows = []
        written = 0
        with pq.ParquetWriter(
            self.directory / EVENTS_FILE, EVENT_SCHEMA, **PARQUET_OPTIONS
        ) as events:
            for track, windows in self._windows():
                stats = _TrackStats(track, written)
                for window in windows:
                    window = _shifted(window, offset_ns)
                    events.write_table(window, row_group_size=ROW_GROUP_ROWS)
                    stats.add(window)
                    written += window.num_rows
                track_rows.append(stats.row())
        # A part may hold samples but no events (a chunk cut before any annotation ended).
        columns = ["track", "first_row", "n_rows", "start_ns", "end_ns", "max_dur_ns"]
        tracks = pd.DataFrame(track_rows, columns=columns).merge(
            track_labels, on="track", how="left"
        )
        pq.write_table(
            pa.Table.from_pandas(tracks, preserve_index=False), self.directory / TRACKS_FILE
        )
        pq.write_table(
            pa.table({"value": pa.array(strings, pa.string())}), self.directory / STRINGS_FILE
        )
        shutil.rmtree(self.spill, ignore_errors=True)
        return StoreSummary(self.directory, written, tracks)


def _slices(table: pa.Table, lo: int, hi: int) -> Iterator[pa.Table]:
    for first in range(lo, hi, _WINDOW_ROWS):
        yield table.slice(first, min(hi, first + _WINDOW_ROWS) - first)


def _shifted(window: pa.Table, offset_ns: int) -> pa.Table:
    if not offset_ns:
        return window
    index = window.schema.get_field_index("start_ns")
    start = window.column(index).to_numpy() + np.int64(offset_ns)
    return window.set_column(index, "start_ns", pa.array(start))


class _TrackStats:
    def __init__(self, track: int, first_row: int) -> None:
        self.track, self.first_row, self.n_rows = track, first_row, 0
        self.start_ns: int | None = None
        self.end_ns: int | None = None
        self.max_dur_ns = 0

    def add(self, window: pa.Table) -> None:
        start = window.column("start_ns").to_numpy()
        dur = window.column("dur_ns").to_numpy()
        if self.start_ns is None:
            self.start_ns = int(start[0])
        end = int((start + dur).max())
        self.end_ns = end if self.end_ns is None else max(self.end_ns, end)
        self.max_dur_ns = max(self.max_dur_ns, int(dur.max()))
        self.n_rows += window.num_rows

    def row(self) -> dict[str, int | None]:
        return {
            "track": self.track,
            "first_row": self.first_row,
            "n_rows": self.n_rows,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "max_dur_ns": self.max_dur_ns,
        }


class _RunCursor:
    """Reads one track's rows of one run, a record batch at a time."""

    def __init__(self, run: _Run, track: int) -> None:
        self.run = run
        self.pos = int(run.track_bounds[track])
        self.end = int(run.track_bounds[track + 1])
        self._reader: pa.ipc.RecordBatchFileReader | None = None
        self._file: pa.OSFile | None = None
        self._batch_index = -1
        self._batch: pa.RecordBatch | None = None

    def remaining(self) -> int:
        return self.end - self.pos

    def _load(self, row: int) -> pa.RecordBatch:
        index = row // self.run.batch_rows
        if index != self._batch_index:
            if self._reader is None:
                self._file = pa.OSFile(str(self.run.path), "rb")
                self._reader = pa.ipc.open_file(self._file)
            self._batch = self._reader.get_batch(index)
            self._batch_index = index
        assert self._batch is not None
        return self._batch

    def start_at(self, row: int) -> int:
        batch = self._load(row)
        return int(batch.column(_START)[row % self.run.batch_rows].as_py())

    def take_until(self, limit_ns: int, max_rows: int) -> pa.Table:
        """Rows from the cursor with start_ns <= limit_ns (at most max_rows)."""
        pieces = []
        stop = min(self.end, self.pos + max_rows)
        while self.pos < stop:
            batch = self._load(self.pos)
            lo = self.pos % self.run.batch_rows
            hi = min(len(batch), lo + (stop - self.pos))
            starts = batch.column(_START).to_numpy()[lo:hi]
            n = int(np.searchsorted(starts, limit_ns, side="right"))
            if n:
                pieces.append(batch.slice(lo, n))
                self.pos += n
            if n < hi - lo:
                break
        return pa.Table.from_batches(pieces, EVENT_SCHEMA) if pieces else EVENT_SCHEMA.empty_table()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def _merge_track(runs: list[_Run], track: int, window_rows: int = _WINDOW_ROWS):
    """The track's events from all runs in (start_ns, run order), in bounded windows.

    Each round takes, from every run, the rows up to the smallest "look-ahead" start among the
    runs (the start ``step`` rows ahead), so no row can be emitted before an earlier one.
    """
    cursors = [c for c in (_RunCursor(r, track) for r in runs) if c.remaining()]
    step = max(window_rows // max(len(cursors), 1), 1024)
    try:
        while cursors:
            horizon = min(c.start_at(min(c.pos + step, c.end) - 1) for c in cursors)
            parts = [p for p in (c.take_until(horizon, step) for c in cursors) if p.num_rows]
            window = pa.concat_tables(parts)
            if len(parts) > 1:
                order = np.argsort(window.column("start_ns").to_numpy(), kind="stable")
                window = window.take(pa.array(order))
            yield window
            for c in [c for c in cursors if not c.remaining()]:
                c.close()
            cursors = [c for c in cursors if c.remaining()]
    finally:
        for c in cursors:
            c.close()
