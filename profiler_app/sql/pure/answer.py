"""A SQL console query's answer, streamed: JSON rows a batch at a time within a row, byte and
time bound, and the process's memory given back when it ends.

The rows come from DuckDB as Arrow batches of ``BATCH_ROWS``, so the web process never holds
more than a batch beyond what it has sent. A row is turned into Python objects only when its
Arrow size leaves room for it: a single giant value (``SELECT list(e) FROM events e``) is cut,
not copied into millions of Python objects. When the answer is cut, ``truncated_by`` says why
(``rows``, ``bytes``, ``time`` or ``error``) and ``note`` says so in words.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import duckdb
import pyarrow as pa

BATCH_ROWS = 512
# A batch smaller than this becomes Python objects at once; a larger one a row at a time.
_WHOLE_BATCH_BYTES = 4 * 2**20
# JSON text of a row is rarely more than twice its Arrow size: a row past twice the room left
# cannot fit, and is cut before it is copied into Python objects.
_ARROW_TO_JSON = 2
# JavaScript numbers are exact up to 2**53; larger integers (epoch nanoseconds) go as text.
_SAFE_INTEGER = 2**53
# DuckDB bounds the memory a query computes with, not the answer it hands over: `select
# repeat('x', 1e8) from range(20)` would come back as 2 GB of Arrow in one batch. So each value
# is cut in SQL to one more than this many characters (bytes for a BLOB; lists, structs and maps
# go as their text form), and the extra one tells the answer that it was cut.
MAX_VALUE_CHARS = 65_536
_NESTED = {"list", "struct", "map", "array", "union"}


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _bounded(column: str, type_id: str) -> str:
    """``column``'s value cut to ``MAX_VALUE_CHARS`` + 1 where its type has no bound width."""
    if type_id == "varchar":
        return f"left({column}, {MAX_VALUE_CHARS + 1})"
    if type_id == "blob":
        return f"{column}[1:{MAX_VALUE_CHARS + 1}]"
    if type_id in _NESTED:
        return f"left(CAST({column} AS VARCHAR), {MAX_VALUE_CHARS + 1})"
    return column


def bounded_values(
    con: duckdb.DuckDBPyConnection, statement: str, relation: duckdb.DuckDBPyRelation
) -> duckdb.DuckDBPyRelation:
    """``relation`` (``statement`` bound) with every value of unbounded width cut in SQL to
    ``MAX_VALUE_CHARS`` + 1, before DuckDB hands it over; itself when no column needs it."""
    names = [f"_c{i}" for i in range(len(relation.columns))]
    exprs = [_bounded(name, kind.id) for name, kind in zip(names, relation.types, strict=True)]
    if exprs == names:
        return relation
    exprs = [
        f"{expr} AS {_identifier(shown)}"
        for expr, shown in zip(exprs, relation.columns, strict=True)
    ]
    # Positional names for the statement's columns: two of them may share a name.
    return con.sql(f"SELECT {', '.join(exprs)} FROM ({statement}) AS _q({', '.join(names)})")


def jsonable(value):
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return str(value) if abs(value) > _SAFE_INTEGER else value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        return float(value) if value.is_finite() else None
    if isinstance(value, dt.date | dt.time | dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, pa.MonthDayNano):  # an INTERVAL: seconds, a month counted as 30 days
        return (value.months * 30 + value.days) * 86400 + value.nanoseconds / 1e9
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return str(value)


def _size(n: int) -> str:
    return f"{n / 2**20:.3g} MiB" if n >= 2**20 else f"{n:,} bytes"


def _encode(row) -> bytes:
    text = json.dumps([jsonable(v) for v in row], ensure_ascii=False, separators=(",", ":"))
    return text.encode()


def _python_rows(batch: pa.RecordBatch) -> Iterator[tuple]:
    if batch.nbytes <= _WHOLE_BATCH_BYTES:
        yield from zip(*(column.to_pylist() for column in batch.columns), strict=True)
        return
    for i in range(batch.num_rows):
        yield tuple(column[i].as_py() for column in batch.columns)


def _prefix_within(batch: pa.RecordBatch, budget: int) -> int:
    """How many first rows of ``batch`` fit ``budget`` Arrow bytes (a binary search)."""
    if batch.nbytes <= budget:
        return batch.num_rows
    lo, hi = 0, batch.num_rows
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if batch.slice(0, mid).nbytes <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def document_end(
    truncated_by: str | None,
    values_cut: bool,
    note: str,
    elapsed_ms: float,
    read_from: str,
    max_rows: int,
    max_bytes: int,
) -> bytes:
    """The answer's last piece: the rows' closing bracket and what the answer says of itself."""
    tail = {
        "truncated": truncated_by is not None,
        "truncated_by": truncated_by,
        "values_cut": values_cut,
        "note": note,
        "elapsed_ms": elapsed_ms,
        "read_from": read_from,
        "max_rows": max_rows,
        "max_bytes": max_bytes,
        "max_value_chars": MAX_VALUE_CHARS,
    }
    return b"]," + json.dumps(tail, ensure_ascii=False)[1:].encode()


class Answer:
    """One query's answer. Iterating it yields the JSON document in pieces:
    ``{"columns", "types", "rows", "truncated", "truncated_by", "values_cut", "note",
    "elapsed_ms", "max_rows", "max_bytes", "max_value_chars"}``; ``close()`` closes the
    connection, then calls ``on_close``. ``relation`` names the columns and their types,
    ``rows`` (``bounded_values`` of it) gives the rows."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        relation: duckdb.DuckDBPyRelation,
        rows: duckdb.DuckDBPyRelation,
        *,
        max_rows: int,
        max_bytes: int,
        timeout_s: float,
        started: float,
        timed_out: threading.Event,
    ) -> None:
        self.con = con
        self.columns = list(relation.columns)
        self.types = [str(t) for t in relation.types]
        self.max_rows, self.max_bytes, self.timeout_s = max_rows, max_bytes, timeout_s
        self.started = started
        self.timed_out = timed_out
        self.rows_sent = 0
        self.bytes_sent = 0
        self.truncated_by: str | None = None
        self.values_cut = False
        self.note = ""
        # "totals" when the query was answered from the parts' event totals (``totals``).
        self.read_from = "events"
        self.on_close: list[Callable[[], None]] = []
        self._closed = False
        self._ended: float | None = None
        self._reader = rows.to_arrow_reader(BATCH_ROWS)
        # The first batch now: most errors (bad casts, out of memory) show here, before any
        # byte of a 200 answer has gone.
        self._next: pa.RecordBatch | None = next(self._reader, None)

    @property
    def elapsed_ms(self) -> float:
        """From the start to the last row sent (to now while rows are still being sent)."""
        ended = self._ended or time.monotonic()
        return round((ended - self.started) * 1000, 1)

    def _cut(self, why: str, note: str) -> None:
        self.truncated_by = why
        self.note = f"{note} {self.note}".strip()  # after the values' cut, if any

    def _batches(self) -> Iterator[pa.RecordBatch]:
        while True:
            batch = self._next
            if batch is None:
                return
            self._next = None
            if batch.num_rows:
                if self.rows_sent >= self.max_rows:
                    self._too_many()
                    return
                yield batch
            if time.monotonic() - self.started > self.timeout_s:
                self._out_of_time()
                return
            try:
                self._next = next(self._reader, None)
            except (duckdb.Error, pa.ArrowException, OSError) as error:
                if self.timed_out.is_set():
                    self._out_of_time()
                else:
                    self._cut("error", f"DuckDB stopped after {self.rows_sent:,} rows: {error}")
                return

    def _too_many(self) -> None:
        self._cut(
            "rows",
            f"More rows matched; only the first {self.max_rows:,} came back "
            "(SQL_MAX_ROWS). Add a LIMIT or aggregate.",
        )

    def _out_of_time(self) -> None:
        self._cut(
            "time",
            f"The query ran past {self.timeout_s:g} s while its rows were sent; "
            f"the first {self.rows_sent:,} came back. Narrow it or aggregate.",
        )

    def _too_big(self) -> None:
        self._cut(
            "bytes",
            f"The answer reached {_size(self.max_bytes)} after "
            f"{self.rows_sent:,} rows and was cut there (SQL_MAX_BYTES). Select fewer or "
            "narrower columns, add a LIMIT or aggregate.",
        )

    def _within_value_width(self, row: tuple) -> tuple:
        if not any(isinstance(v, str | bytes) and len(v) > MAX_VALUE_CHARS for v in row):
            return row
        if not self.values_cut:
            self.values_cut = True
            cut = f"Values longer than {MAX_VALUE_CHARS:,} characters were cut to their first {MAX_VALUE_CHARS:,}."
            self.note = f"{self.note} {cut}".strip()
        return tuple(v[:MAX_VALUE_CHARS] if isinstance(v, str | bytes) else v for v in row)

    def json_rows(self) -> Iterator[bytes]:
        """The rows as JSON arrays joined by commas, a batch at a time."""
        try:
            yield from self._json_rows()
        finally:
            self._ended = time.monotonic()

    def _json_rows(self) -> Iterator[bytes]:
        for whole in self._batches():
            batch = whole.slice(0, self.max_rows - self.rows_sent)
            room = self.max_bytes - self.bytes_sent
            fits = _prefix_within(batch, _ARROW_TO_JSON * room)
            encoded: list[bytes] = []
            for row in _python_rows(batch.slice(0, fits)):
                text = _encode(self._within_value_width(row))
                cost = len(text) + (1 if self.rows_sent else 0)  # and the comma before it
                if cost > room:
                    fits = -1
                    break
                encoded.append(text)
                room -= cost
                self.rows_sent += 1
                self.bytes_sent += cost
            if encoded:
                yield b",".join(encoded)
            if fits < batch.num_rows:
                self._too_big()
                return
            if batch.num_rows < whole.num_rows:
                self._too_many()
                return

    def __iter__(self) -> Iterator[bytes]:
        head = json.dumps({"columns": self.columns, "types": self.types}, ensure_ascii=False)
        yield head[:-1].encode() + b',"rows":['
        first = True
        for piece in self.json_rows():
            yield piece if first else b"," + piece
            first = False
        yield document_end(
            self.truncated_by,
            self.values_cut,
            self.note,
            self.elapsed_ms,
            self.read_from,
            self.max_rows,
            self.max_bytes,
        )

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._next = None
            self._reader.close()
            self.con.close()  # frees the database: DuckDB's memory goes back to the system
        finally:
            for callback in self.on_close:
                callback()
