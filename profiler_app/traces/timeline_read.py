"""Reading a timeline store back, memory-mapped: whole, or one track's time window. Reading
never writes: a store of an older format answers with the columns it has, and asking it for an
event-model column it lacks raises ``StoreAwaitsUpgrade`` (the store sweep adds them)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from profiler_app.traces.event_model import MODEL_COLUMNS
from profiler_app.traces.store_layout import (
    EVENTS_FILE,
    STRINGS_FILE,
    TRACKS_FILE,
    StoreAwaitsUpgrade,
)


class TimelineReader:
    """A store's events, with the event model's columns (``traces.event_model``)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.strings: list[str] = (
            pq.read_table(self.directory / STRINGS_FILE).column("value").to_pylist()
        )
        self.events = pq.ParquetFile(self.directory / EVENTS_FILE, memory_map=True)
        self.tracks: pd.DataFrame = pq.read_table(self.directory / TRACKS_FILE).to_pandas()
        meta = self.events.metadata
        self._group_starts = np.cumsum(
            [0] + [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        )

    @property
    def n_events(self) -> int:
        return int(self._group_starts[-1])

    @property
    def missing_model_columns(self) -> list[str]:
        """The event model's columns this store lacks (an older format awaiting the sweep)."""
        names = self.events.schema_arrow.names
        return [name for name in MODEL_COLUMNS if name not in names]

    def _check(self, columns: list[str] | None) -> None:
        """StoreAwaitsUpgrade when ``columns`` (None: whatever the store has) name a model
        column the store lacks."""
        missing = [name for name in self.missing_model_columns if name in (columns or ())]
        if missing:
            raise StoreAwaitsUpgrade(self.directory, missing)

    def _read(self, groups: list[int] | None, columns: list[str] | None) -> pa.Table:
        """Row groups (None: all) of ``columns`` (None: all the store has)."""
        self._check(columns)
        if groups is None:
            return self.events.read(columns=columns, use_threads=False)
        return self.events.read_row_groups(groups, columns=columns, use_threads=False)

    def _empty(self, columns: list[str]) -> pa.Table:
        return self.events.schema_arrow.empty_table().select(columns)

    def read_all(self, columns: list[str] | None = None) -> pa.Table:
        return self._read(None, columns)

    def column(self, name: str) -> np.ndarray:
        """One column of every event, read a row group at a time into one array (reading the
        whole column through Arrow would hold it twice)."""
        out: np.ndarray | None = None
        for first, group in zip(self._group_starts.tolist(), self.groups([name]), strict=False):
            part = group[name]
            if out is None:
                out = np.empty(self.n_events, dtype=part.dtype)
            out[first : first + len(part)] = part
        if out is None:
            return self._empty([name]).column(0).to_numpy()
        return out

    def groups(self, names: Sequence[str]) -> Iterator[dict[str, np.ndarray]]:
        """``names`` of the events a row group at a time, in store order: for work whose
        results compose across groups, so that it holds one group's columns, not the part's."""
        self._check(list(names))
        # Read, not memory-mapped: mapped pages of the file would stay in this process.
        events = pq.ParquetFile(self.directory / EVENTS_FILE)
        for group in range(events.metadata.num_row_groups):
            table = events.read_row_group(group, list(names), use_threads=False)
            yield {name: table.column(name).to_numpy() for name in names}

    def columns(
        self, names: Sequence[str], rows: np.ndarray | None = None
    ) -> dict[str, np.ndarray]:
        """``column`` of each of ``names``, each cut to ``rows`` (a mask of the events; None:
        all) as soon as it is read: one whole column held at a time, never the table (read
        whole through Arrow and pandas, a part's columns took 3.5 times their size)."""
        return {
            name: self.column(name) if rows is None else self.column(name)[rows] for name in names
        }

    def read_kinds(self, kinds: list[int], columns: list[str]) -> pa.Table:
        """Only the events of ``kinds``, one row group at a time: memory follows what is kept,
        not the part's size (GPU work is a small share of a trace's events)."""
        wanted = pa.array(kinds, type=pa.uint8())
        needed = list(dict.fromkeys([*columns, "kind"]))
        pieces = []
        for group in range(self.events.metadata.num_row_groups):
            table = self._read([group], needed)
            pieces.append(table.filter(pc.is_in(table.column("kind"), value_set=wanted)))
        if not pieces:
            return self._empty(columns)
        return pa.concat_tables(pieces).select(columns)

    def rows(self, first: int, stop: int, columns: list[str]) -> pa.Table:
        """Rows [first, stop) of the file, reading only the row groups that hold them."""
        if stop <= first:
            return self._empty(columns)
        lo = int(np.searchsorted(self._group_starts, first, side="right") - 1)
        hi = int(np.searchsorted(self._group_starts, stop, side="left"))
        table = self._read(list(range(lo, hi)), columns)
        return table.slice(first - int(self._group_starts[lo]), stop - first)
