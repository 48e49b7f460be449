"""The timeline writer's spilled runs: each a batch of events sorted in store order, written
as Arrow IPC, and their merge back into one stream in store order, in bounded windows.

Apart from the writer (``traces.timeline_store``) because the merge is a concept of its own: a
k-way merge over files that never holds more than a few record batches of each run.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa

from profiler_app.traces.event_model import store_order

RUN_BATCH_ROWS = 16384
STORE_ORDER = ("track", "start_ns", "dur_ns")


@dataclass(frozen=True)
class Run:
    path: Path
    rows: int


def write_run(path: Path, table: pa.Table) -> Run:
    """Writes ``table`` (already in store order) as one run."""
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=RUN_BATCH_ROWS)
    return Run(path, table.num_rows)


class _RunCursor:
    """Reads one run from a row on, a record batch at a time (of ``columns`` only, when
    given: they hold the track, start and duration)."""

    def __init__(self, run: Run, columns: tuple[str, ...] | None = None) -> None:
        self._file = pa.OSFile(str(run.path), "rb")
        self._reader = pa.ipc.open_file(self._file)
        self._columns = columns
        schema = self._reader.schema
        self._schema = schema if columns is None else _project(schema, columns)
        # Made once: most rounds of the merge take nothing from most runs, and an empty table
        # builds each of its columns from a Python list.
        self._empty = self._schema.empty_table()
        self._track = self._schema.get_field_index("track")
        self._start = self._schema.get_field_index("start_ns")
        self.pos, self.end = 0, run.rows
        # The batch at the cursor and the one its look-ahead row is in (``key_at``): with one,
        # each round of the merge read both again.
        self._batches: dict[int, pa.RecordBatch] = {}

    def remaining(self) -> int:
        return self.end - self.pos

    def _load(self, row: int) -> pa.RecordBatch:
        index = row // RUN_BATCH_ROWS
        batch = self._batches.get(index)
        if batch is None:
            if len(self._batches) >= 2:  # the cursor only moves forward: drop the earliest
                del self._batches[min(self._batches)]
            batch = self._reader.get_batch(index)
            if self._columns is not None:
                batch = batch.select(list(self._columns))
            self._batches[index] = batch
        return batch

    def key_at(self, row: int) -> tuple[int, int]:
        """(track, start_ns) of a row."""
        batch = self._load(row)
        at = row % RUN_BATCH_ROWS
        track, start = batch.column(self._track)[at], batch.column(self._start)[at]
        return int(track.as_py()), int(start.as_py())

    def take_until(self, limit: tuple[int, int], max_rows: int, below: bool = False) -> pa.Table:
        """Rows from the cursor with (track, start_ns) <= ``limit`` (< ``limit`` when
        ``below``), at most max_rows."""
        limit_track, limit_ns = limit
        side: Literal["left", "right"] = "left" if below else "right"
        pieces = []
        stop = min(self.end, self.pos + max_rows)
        while self.pos < stop:
            batch = self._load(self.pos)
            lo = self.pos % RUN_BATCH_ROWS
            hi = min(len(batch), lo + (stop - self.pos))
            tracks = batch.column(self._track).to_numpy()[lo:hi]
            under = int(np.searchsorted(tracks, limit_track, side="left"))
            same = int(np.searchsorted(tracks, limit_track, side="right"))
            starts = batch.column(self._start).to_numpy()[lo + under : lo + same]
            n = under + int(np.searchsorted(starts, limit_ns, side=side))
            if n:
                pieces.append(batch.slice(lo, n))
                self.pos += n
            if n < hi - lo:
                break
        return pa.Table.from_batches(pieces, self._schema) if pieces else self._empty

    def close(self) -> None:
        self._file.close()


def _project(schema: pa.Schema, columns: tuple[str, ...]) -> pa.Schema:
    return pa.schema([schema.field(c) for c in columns])


def merge_runs(
    runs: list[Run], window_rows: int, columns: tuple[str, ...] | None = None
) -> Iterator[pa.Table]:
    """The events of all runs in store order (``store_order`` over the runs one after the
    other), in bounded windows (of ``columns`` only, when given).

    Each round takes, from every run, the rows before the smallest "look-ahead" (track,
    start) among the runs (the one ``step`` rows ahead), so no row can be emitted before an
    earlier one and the events of one (track, start) are never split between windows; when
    every run is at that key, the round takes all its rows.
    """
    cursors = [_RunCursor(r, columns) for r in runs]
    step = max(window_rows // max(len(cursors), 1), 1024)
    try:
        cursors = _open(cursors)
        while cursors:
            horizon = min(c.key_at(min(c.pos + step, c.end) - 1) for c in cursors)
            parts = [
                p for p in (c.take_until(horizon, step, below=True) for c in cursors) if p.num_rows
            ]
            if not parts:  # every run is at the horizon: the events of that (track, start)
                parts = [p for p in (c.take_until(horizon, 1 << 62) for c in cursors) if p.num_rows]
            window = pa.concat_tables(parts)
            if len(parts) > 1:
                order = store_order(*(window.column(c).to_numpy() for c in STORE_ORDER))
                window = window.take(pa.array(order))
            yield window
            cursors = _open(cursors)
    finally:
        for c in cursors:
            c.close()


def _open(cursors: list[_RunCursor]) -> list[_RunCursor]:
    """The cursors with rows left (the others closed)."""
    for c in cursors:
        if not c.remaining():
            c.close()
    return [c for c in cursors if c.remaining()]
