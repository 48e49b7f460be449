"""Read-only SQL over one job's timeline stores, in a locked-down in-memory DuckDB.

Every query gets a fresh connection whose views (``SCHEMA``) read the job's Parquet files in
place. Before the user's text runs, the connection may read exactly those files and nothing
else (``allowed_paths`` with external access off: no other file, no network, no ATTACH/COPY),
loads no extension, and its configuration is locked. Only one SELECT statement is accepted
(DuckDB's own parser decides), it is interrupted after ``timeout_s``, and its answer streams
within ``max_rows`` and ``max_bytes`` (``sql.pure.answer``).

One module on purpose (near 600 lines): every lock of the sandbox, and every view it opens to
the user, is read in one place; a reviewer of its safety reads this file and ``answer``.
"""

from __future__ import annotations

import functools
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from profiler_app.sql.pure import totals
from profiler_app.sql.pure.answer import Answer, bounded_values
from profiler_app.traces.store_layout import (
    EVENTS_FILE,
    MANIFEST_FILE,
    MEMORY_FILE,
    STRINGS_FILE,
    TOTALS_FILE,
    TRACKS_FILE,
    read_manifest,
)
from tracefmt.columns import EVENT_COLUMNS
from tracefmt.kinds import KIND_NAMES, MEMCPY_KIND_NAMES

MAX_QUERY_CHARS = 20_000

# Columns holding ids into the part's strings.
_STRING_COLUMNS = ("name", "input_types", "input_dims", "collective", "dtype", "process_group")
_NOT_NULLABLE = ("kind", "track", "start_ns", "dur_ns", "memcpy_kind")


@dataclass(frozen=True)
class StorePart:
    part: int
    node: str
    rank: int
    directory: Path


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 10.0
    max_rows: int = 10_000
    max_bytes: int = 16 * 2**20
    memory_limit: str = "256MB"
    threads: int = 2


class QueryRefused(ValueError):
    """The text is not one read-only SELECT statement (or does not parse)."""


class QueryFailed(ValueError):
    """DuckDB refused or failed the statement (bad SQL, a sandbox refusal, out of memory)."""


class QueryTimedOut(ValueError):
    pass


# The views, their columns and what they mean, for the schema endpoint and docs/sql.md.
_PART_COLUMNS = [
    ("part", "INTEGER", "id of the uploaded part (one trace file or collector run)"),
    ("node", "VARCHAR", "node (host) the part came from"),
    ("rank", "INTEGER", "distributed rank of the part"),
]
_TIMED_COLUMNS = [
    ("track", "INTEGER", "track (CPU thread or GPU stream) within the part; see tracks"),
    ("name", "VARCHAR", "event name (operator, kernel, annotation…)"),
    ("start_ns", "BIGINT", "start, ns since the unix epoch"),
    ("dur_ns", "BIGINT", "duration, ns"),
    ("end_ns", "BIGINT", "start_ns + dur_ns, ns since the unix epoch"),
]
_KERNEL_COLUMNS = [
    ("device", "SMALLINT", "GPU index"),
    ("stream", "INTEGER", "CUDA stream"),
    ("correlation", "BIGINT", "links a kernel/copy to the runtime call that launched it"),
    ("external_id", "BIGINT", "links GPU work and runtime calls to the CPU operator"),
    ("grid_x", "INTEGER", "kernel grid size, x (also grid_y, grid_z)"),
    ("grid_y", "INTEGER", ""),
    ("grid_z", "INTEGER", ""),
    ("block_x", "INTEGER", "kernel block size, x (also block_y, block_z)"),
    ("block_y", "INTEGER", ""),
    ("block_z", "INTEGER", ""),
    ("registers", "INTEGER", "registers per thread"),
    ("shared_mem", "INTEGER", "shared memory per block, bytes"),
    ("occupancy_pct", "FLOAT", "estimated achieved occupancy, %"),
    ("collective", "VARCHAR", "collective of a communication kernel (allreduce…)"),
]
SCHEMA: dict[str, dict] = {
    "events": {
        "description": "Every event of the job's parsed parts (CPU operators, annotations, "
        "runtime calls, kernels, copies, steps…). Absent values are NULL.",
        "columns": [
            *_PART_COLUMNS,
            ("kind", "VARCHAR", "one of: " + ", ".join(KIND_NAMES.values())),
            *_TIMED_COLUMNS,
            *_KERNEL_COLUMNS,
            ("bytes", "BIGINT", "bytes copied or set (memcpy/memset)"),
            ("memcpy_kind", "VARCHAR", "copy direction: " + ", ".join(MEMCPY_KIND_NAMES.values())),
            ("bandwidth_gbps", "DOUBLE", "copy bandwidth, GB/s"),
            ("input_types", "VARCHAR", "operator input types, as recorded"),
            ("input_dims", "VARCHAR", "operator input shapes, as recorded"),
            ("dtype", "VARCHAR", "collective data type"),
            ("in_nelems", "BIGINT", "collective input elements"),
            ("out_nelems", "BIGINT", "collective output elements"),
            ("group_size", "INTEGER", "collective process-group size"),
            ("process_group", "VARCHAR", "collective process group"),
            ("depth", "INTEGER", "nesting depth on its thread or stream (0: top)"),
            (
                "parent_row",
                "BIGINT",
                "row (within the part) of the enclosing event; NULL at the top",
            ),
            ("self_ns", "BIGINT", "duration less what its direct children cover (glossary)"),
            ("step", "BIGINT", "the training step it belongs to (NULL: none)"),
            ("captured", "BOOLEAN", "recorded by Kineto (a collector job's captured steps)"),
        ],
    },
    "kernels": {
        "description": "GPU kernels: the events of kind 'kernel', with their launch details.",
        "columns": [*_PART_COLUMNS, *_TIMED_COLUMNS, *_KERNEL_COLUMNS],
    },
    "steps": {
        "description": "Training steps: 'ProfilerStep#N' / 'step_N' annotations and step events.",
        "columns": [
            *_PART_COLUMNS,
            ("step", "BIGINT", "step number"),
            *_TIMED_COLUMNS,
        ],
    },
    "tracks": {
        "description": "One row per track (CPU thread or GPU stream) of each part.",
        "columns": [
            *_PART_COLUMNS,
            ("track", "INTEGER", "track id within the part (events.track)"),
            ("label", "VARCHAR", "the track's label on the timeline"),
            ("on_device", "BOOLEAN", "a GPU stream (true) or a CPU thread (false)"),
            ("pid", "BIGINT", "process id (GPU index for a device track)"),
            ("tid", "BIGINT", "thread id (stream for a device track)"),
            ("n_events", "BIGINT", "events on the track"),
            ("start_ns", "BIGINT", "first event's start, ns since the unix epoch"),
            ("end_ns", "BIGINT", "last event's end, ns since the unix epoch"),
            ("max_dur_ns", "BIGINT", "longest event, ns"),
        ],
    },
    "strings": {
        "description": "Each part's interned strings (event names and other text columns).",
        "columns": [
            *_PART_COLUMNS,
            ("id", "BIGINT", "the string's id within its part"),
            ("value", "VARCHAR", "the string"),
        ],
    },
    "memory": {
        "description": "Allocator events ('[memory]', recorded with profile_memory=True): one "
        "allocation (bytes > 0) or free (bytes < 0) and the device's totals after it. Present "
        "only when a part recorded memory events.",
        "columns": [
            *_PART_COLUMNS,
            ("time_ns", "BIGINT", "when, ns since the unix epoch"),
            ("track", "INTEGER", "track of the allocating thread"),
            ("device_type", "INTEGER", "0 CPU, 1 CUDA"),
            ("device_id", "INTEGER", "device index (-1 for the CPU)"),
            ("addr", "BIGINT", "address of the block"),
            ("bytes", "BIGINT", "bytes allocated (> 0) or freed (< 0)"),
            (
                "total_allocated",
                "BIGINT",
                "bytes allocated on the device after it (no totals in "
                "the trace: the running sum of bytes)",
            ),
            (
                "total_reserved",
                "BIGINT",
                "bytes the allocator reserved after it (-1: not recorded)",
            ),
        ],
    },
}


# Queries the console offers as buttons (name, SQL).
EXAMPLES: list[tuple[str, str]] = [
    (
        "Events per rank and kind",
        "SELECT rank, kind, count(*) AS events, sum(dur_ns) AS total_ns\n"
        "FROM events\nGROUP BY rank, kind\nORDER BY rank, total_ns DESC",
    ),
    (
        "Top kernels by total time",
        "SELECT name, count(*) AS launches, sum(dur_ns) AS total_ns, avg(dur_ns) AS avg_ns\n"
        "FROM kernels\nGROUP BY name\nORDER BY total_ns DESC\nLIMIT 20",
    ),
    (
        "Kernels while rank 1 waited in all-reduce",
        "-- Kernels on every rank that overlap rank 1's all-reduce calls (change the rank)\n"
        "WITH waits AS (\n"
        "  SELECT start_ns, end_ns FROM events\n"
        "  WHERE rank = 1 AND kind IN ('cpu_op', 'user_annotation')\n"
        "    AND name ILIKE '%all_reduce%'\n"
        ")\n"
        "SELECT k.rank, k.name, count(*) AS kernels, sum(k.dur_ns) AS total_ns\n"
        "FROM kernels k JOIN waits w ON k.start_ns < w.end_ns AND k.end_ns > w.start_ns\n"
        "GROUP BY k.rank, k.name\nORDER BY total_ns DESC",
    ),
    (
        "Step times per rank",
        "SELECT step, rank, dur_ns / 1e6 AS ms\nFROM steps\nORDER BY step, rank",
    ),
    (
        "Longest CPU operators",
        "SELECT rank, name, dur_ns, start_ns\nFROM events\nWHERE kind = 'cpu_op'\n"
        "ORDER BY dur_ns DESC\nLIMIT 20",
    ),
    (
        "Peak memory per device (jobs with memory events)",
        "SELECT rank, device_type, device_id, max(total_allocated) AS peak_allocated_bytes\n"
        "FROM memory\nGROUP BY ALL\nORDER BY ALL",
    ),
]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _nullable(column: str) -> str:
    absent = EVENT_COLUMNS[column][1]
    if column in _NOT_NULLABLE:
        return f"f.{column}"
    if isinstance(absent, float):  # NaN
        return f"CASE WHEN isnan(f.{column}) THEN NULL ELSE f.{column} END"
    return f"NULLIF(f.{column}, {absent})"


# The event model's columns the views read, and what they read as in a store of an older
# format that lacks them (until the store sweep adds them).
_MODEL_SELECT = {
    "depth": ("f.depth::INTEGER", "NULL::INTEGER"),
    "parent_row": ("NULLIF(f.parent, -1)", "NULL::BIGINT"),
    "self_ns": ("f.self_ns", "NULL::BIGINT"),
    "step": ("NULLIF(f.step, -1)::BIGINT", "NULL::BIGINT"),
    "captured": ("f.captured", "NULL::BOOLEAN"),
    "_is_step": ("f.is_step", "NULL::BOOLEAN"),
}
_MODEL_READ = ("depth", "parent", "self_ns", "step", "captured", "is_step")


def _has_model(part: StorePart) -> bool:
    """The part's events carry the event model's columns: its manifest says so, or (a store
    written before manifests) its events file's schema does."""
    manifest = read_manifest(part.directory / MANIFEST_FILE)
    if manifest is not None and manifest.current:
        return True
    return set(_MODEL_READ) <= set(pq.read_schema(part.directory / EVENTS_FILE).names)


def _event_columns(strings: str, modelled: bool = True) -> str:
    """The select list of ``events`` over the parts' raw stores ``f``; ``strings`` opens the
    lookup of a string id (``list[start + ``). ``modelled``: some part has the event model's
    columns (parts that lack them read them as NULL); none has: they are all NULL."""
    out = []
    for column in EVENT_COLUMNS:
        if column == "kind":
            out.append(f"{_variable('_kind_names')}[f.kind::BIGINT + 1] AS kind")
        elif column in _STRING_COLUMNS:
            out.append(f"{strings}{_nullable(column)} + 1] AS {column}")
        elif column == "memcpy_kind":
            out.append(f"{_variable('_copy_names')}[f.memcpy_kind::BIGINT + 1] AS memcpy_kind")
        else:
            out.append(f"{_nullable(column)} AS {column}")
        if column == "dur_ns":
            out.append("f.start_ns + f.dur_ns AS end_ns")
    out += [f"{read if modelled else absent} AS {c}" for c, (read, absent) in _MODEL_SELECT.items()]
    return ", ".join(out)


# Parts written by other versions may differ in their small files' columns.
_BY_NAME = ", union_by_name = true"
_ROW_NUMBERS = ", file_row_number = true"


def _variable(name: str) -> str:
    """Reads a list set with ``SET VARIABLE`` (``_set_parts``). A constant to DuckDB: a lookup
    in it costs a row nothing like a join would, and a filter on ``rank`` skips whole files."""
    return f"getvariable({_quote(name)})"


def _from_files(parts: list[StorePart], name: str, options: str = "") -> str:
    """``FROM`` the parts' ``name`` files as ``f``, in one scan (not a union of a select per part,
    which DuckDB binds again for every part in every query)."""
    files = ", ".join(_quote(str(p.directory / name)) for p in parts)
    return f"read_parquet([{files}]{options}) f"


def _part_columns(name: str) -> str:
    """A row's part, node and rank: its file's place in the file list picks them."""
    key = name.split(".")[0]
    at = "[f.file_index::BIGINT + 1]"
    return ", ".join(
        f"{_variable(f'_{key}_{column}')}{at} AS {column}" for column in ("part", "node", "rank")
    )


def _set_parts(con: duckdb.DuckDBPyConnection, name: str, parts: list[StorePart]) -> None:
    key = name.split(".")[0]
    con.execute(f"SET VARIABLE _{key}_part = ?::INTEGER[]", [[p.part for p in parts]])
    con.execute(f"SET VARIABLE _{key}_node = ?::VARCHAR[]", [[p.node for p in parts]])
    con.execute(f"SET VARIABLE _{key}_rank = ?::INTEGER[]", [[p.rank for p in parts]])


def _events_select(parts: list[StorePart]) -> str:
    # A part's string ids index its own strings: ``_strings_all`` holds every part's, one
    # after another, from the part's offset.
    offset = f"{_variable('_events_strings_at')}[f.file_index::BIGINT + 1]"
    strings = f"{_variable('_strings_all')}[{offset} + "
    modelled = [_has_model(p) for p in parts]
    columns = _event_columns(strings, any(modelled))
    # A part of an older format lacks model columns: matched by name, they read as NULL there.
    options = "" if all(modelled) else _BY_NAME
    return (
        f"SELECT {_part_columns(EVENTS_FILE)}, {columns} "
        f"FROM {_from_files(parts, EVENTS_FILE, options)}"
    )


def _tracks_select(parts: list[StorePart]) -> str:
    return (
        f"SELECT {_part_columns(TRACKS_FILE)}, track::INTEGER AS track, label, on_device, "
        "pid::BIGINT AS pid, tid::BIGINT AS tid, n_rows::BIGINT AS n_events, "
        "start_ns::BIGINT AS start_ns, end_ns::BIGINT AS end_ns, "
        f"max_dur_ns::BIGINT AS max_dur_ns FROM {_from_files(parts, TRACKS_FILE, _BY_NAME)}"
    )


def _rows_with_part(parts: list[StorePart], name: str, options: str = _BY_NAME) -> str:
    """Every column of the parts' ``name`` files, after their part, node and rank."""
    return f"SELECT {_part_columns(name)}, f.* FROM {_from_files(parts, name, options)}"


def write_totals(directory: str | Path) -> None:
    """Writes the store's event totals, through the console's own ``events`` view (a product
    of the store: the ingest and the store sweep call this, never a query)."""
    path = Path(directory) / TOTALS_FILE
    staging = path.with_name(f".{path.name}.{uuid.uuid4().hex}")  # two writers: each its own
    con = duckdb.connect(":memory:", config={"autoload_known_extensions": False})
    try:
        con.execute("SET threads = 1")
        con.execute("SET memory_limit = '256MB'")
        _create_views(con, [StorePart(0, "", 0, Path(directory))])
        con.execute(f"COPY ({totals.TOTALS_SELECT}) TO {_quote(str(staging))} (FORMAT parquet)")
    finally:
        con.close()
    staging.replace(path)


def _strings(con: duckdb.DuckDBPyConnection, parts: list[StorePart], with_events: list) -> None:
    """``_strings`` (the ``strings`` view's table), every part's strings in one list
    (``_strings_all``) and where each part's begin in it (``_events_strings_at``)."""
    if not parts:
        con.execute(
            "CREATE TABLE _strings (part INTEGER, node VARCHAR, rank INTEGER, id BIGINT, "
            "value VARCHAR)"
        )
        return
    con.execute(
        f"CREATE TABLE _strings AS SELECT {_part_columns(STRINGS_FILE)}, "
        "f.file_row_number AS id, f.value, f.file_index::BIGINT AS _file "
        f"FROM {_from_files(parts, STRINGS_FILE, _ROW_NUMBERS)}"
    )
    con.execute(
        "SET VARIABLE _strings_all = (SELECT coalesce(list(value ORDER BY _file, id), []) "
        "FROM _strings)"
    )
    counts = dict(con.execute("SELECT _file, count(*) FROM _strings GROUP BY _file").fetchall())
    starts, at = {}, 0
    for i, part in enumerate(parts):
        starts[part.directory, part.part] = at
        at += counts.get(i, 0)
    con.execute(
        "SET VARIABLE _events_strings_at = ?::BIGINT[]",
        [[starts[p.directory, p.part] for p in with_events]],
    )
    con.execute("ALTER TABLE _strings DROP COLUMN _file")


def _with_events(con: duckdb.DuckDBPyConnection, parts: list[StorePart]) -> list[StorePart]:
    """The parts that hold events."""
    # Each view and the query bind the same files: their footers are parsed once, not at each.
    con.execute("SET parquet_metadata_cache = true")
    return [p for p in parts if _has_events(p)]


def _has_events(part: StorePart) -> bool:
    return (part.directory / EVENTS_FILE).exists()


def _create_views(con: duckdb.DuckDBPyConnection, parts: list[StorePart]) -> list[str]:
    """The views over ``parts``; the files they read (the only files the query may read)."""
    with_events = _with_events(con, parts)
    for variable, names in (("_kind_names", KIND_NAMES), ("_copy_names", MEMCPY_KIND_NAMES)):
        by_id = [names.get(i) for i in range(max(names) + 1)]  # an unknown id reads as NULL
        con.execute(f"SET VARIABLE {variable} = ?::VARCHAR[]", [by_id])
    groups = {
        STRINGS_FILE: parts,
        EVENTS_FILE: with_events,
        TRACKS_FILE: with_events,
        MEMORY_FILE: [p for p in parts if (p.directory / MEMORY_FILE).exists()],
    }
    for name, group in groups.items():
        _set_parts(con, name, group)
    _strings(con, parts, with_events)
    con.execute("CREATE VIEW strings AS SELECT * FROM _strings")
    if with_events:
        events, tracks = _events_select(with_events), _tracks_select(with_events)
    else:  # no parsed part: the views exist, empty
        tracks = "SELECT * FROM (SELECT NULL::INTEGER AS part) WHERE false"
        events = (
            "SELECT * FROM (SELECT NULL::INTEGER AS part, NULL::BOOLEAN AS _is_step) WHERE false"
        )
    con.execute(f"CREATE VIEW _events AS {events}")
    con.execute("CREATE VIEW events AS SELECT * EXCLUDE (_is_step) FROM _events")
    con.execute(f"CREATE VIEW tracks AS {tracks}")
    kernel_columns = [c for c, _, _ in SCHEMA["kernels"]["columns"]]
    step_columns = [c for c, _, _ in SCHEMA["steps"]["columns"] if c != "step"]
    if with_events:
        con.execute(
            f"CREATE VIEW kernels AS SELECT {', '.join(kernel_columns)} FROM events "
            "WHERE kind = 'kernel'"
        )
        con.execute(
            f"CREATE VIEW steps AS SELECT step, {', '.join(step_columns)} FROM _events "
            "WHERE _is_step"
        )
    else:
        con.execute("CREATE VIEW kernels AS SELECT * FROM events")
        con.execute("CREATE VIEW steps AS SELECT * FROM events")
    if groups[MEMORY_FILE]:
        con.execute(f"CREATE VIEW memory AS {_rows_with_part(groups[MEMORY_FILE], MEMORY_FILE)}")
    return [str(p.directory / name) for name, group in groups.items() for p in group]


def _lock(con: duckdb.DuckDBPyConnection, files: list[str], limits: Limits) -> None:
    """From here on the connection reads ``files`` only, and nothing can change that."""
    con.execute(f"SET memory_limit = {_quote(limits.memory_limit)}")
    con.execute(f"SET threads = {int(limits.threads)}")
    con.execute("SET temp_directory = ''")  # nothing spills to disk
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET allow_community_extensions = false")
    con.execute(f"SET allowed_paths = [{', '.join(_quote(f) for f in files)}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def only_select(query: str) -> str:
    """The one SELECT statement of ``query``, or QueryRefused saying why not."""
    if len(query) > MAX_QUERY_CHARS:
        raise QueryRefused(f"The query is longer than {MAX_QUERY_CHARS} characters.")
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as error:
        raise QueryRefused(str(error)) from None
    if not statements:
        raise QueryRefused("The query is empty.")
    if len(statements) > 1:
        raise QueryRefused("Send one statement at a time.")
    [statement] = statements
    if statement.type != duckdb.StatementType.SELECT:
        kind = statement.type.name.replace("_STATEMENT", "")
        raise QueryRefused(
            f"Only SELECT queries can run here (this is a {kind} statement): the console is "
            "read-only."
        )
    return statement.query


def _create_totals_views(con: duckdb.DuckDBPyConnection, parts: list[StorePart]) -> list[str]:
    """Enough to bind a query and answer it from the event totals: the totals views, and
    ``events`` and ``kernels`` as empty views of their documented columns. No part's strings or
    events are read (over a thousand parts, reading their strings alone takes most of a
    second). The files they read."""
    with_events = _with_events(con, parts)
    _set_parts(con, TOTALS_FILE, with_events)
    for view in ("events", "kernels"):
        columns = ", ".join(f"NULL::{kind} AS {name}" for name, kind, _ in SCHEMA[view]["columns"])
        con.execute(f"CREATE VIEW {view} AS SELECT * FROM (SELECT {columns}) WHERE false")
    if with_events:
        con.execute(
            f"CREATE VIEW {totals.TOTALS_VIEWS['events']} AS "
            # One writer, one schema: no file's footer read to unify them.
            f"{_rows_with_part(with_events, TOTALS_FILE, options='')}"
        )
        con.execute(
            f"CREATE VIEW {totals.TOTALS_VIEWS['kernels']} AS "
            f"SELECT * FROM {totals.TOTALS_VIEWS['events']} WHERE kind = 'kernel'"
        )
    return [str(p.directory / TOTALS_FILE) for p in with_events]


def connect(
    parts: list[StorePart], limits: Limits, totals_only: bool = False
) -> duckdb.DuckDBPyConnection:
    """A connection with the views over ``parts``, already locked (``totals_only``: only what
    answers from the event totals, ``_create_totals_views``)."""
    con = duckdb.connect(":memory:", config={"autoload_known_extensions": False})
    try:
        files = _create_totals_views(con, parts) if totals_only else _create_views(con, parts)
        _lock(con, files, limits)
    except BaseException:
        con.close()
        raise
    return con


# The ``events`` view's columns, as documented (binding the view again to ask costs a query).
_EVENT_VIEW_COLUMNS = {column for column, _, _ in SCHEMA["events"]["columns"]}


@functools.cache
def _scalar_functions() -> frozenset[str]:
    with duckdb.connect(":memory:", config={"autoload_known_extensions": False}) as con:
        return totals.scalar_functions(con)


def _over_totals(
    parts: list[StorePart], statement: str, limits: Limits
) -> tuple[duckdb.DuckDBPyConnection, str] | None:
    """A connection to the parts' event totals and ``statement`` rewritten over them, when it
    means the same there (``sql.pure.totals``); None when it must read the events (as it
    must while a part's store of an older format awaits the sweep that writes its totals)."""
    if not all((p.directory / TOTALS_FILE).exists() for p in parts if _has_events(p)):
        return None
    con = connect(parts, limits, totals_only=True)
    try:
        relation = con.sql(statement)  # over the empty views: names the answer's columns
        rewritten = totals.rewrite(
            con, statement, _EVENT_VIEW_COLUMNS, relation.columns, _scalar_functions()
        )
        if rewritten:
            con.sql(rewritten)  # binds over the totals, or says it cannot
            return con, rewritten
    except duckdb.Error:  # reads another view, or is wrong: the events' connection says how
        pass
    con.close()
    return None


def open_query(
    parts: list[StorePart], query: str, limits: Limits | None = None, use_totals: bool = True
) -> Answer:
    """Starts ``query`` (one SELECT) over the views of ``parts`` in a locked connection; the
    caller reads the answer and closes it. Refusals, errors and time-outs before the first
    rows raise here. A query that only groups and aggregates reads the parts' event totals
    instead of their events (``use_totals``: unless told not to)."""
    limits = limits or Limits()
    statement = only_select(query)
    started = time.monotonic()
    over_totals = _over_totals(parts, statement, limits) if use_totals else None
    con = connect(parts, limits) if over_totals is None else over_totals[0]
    timed_out = threading.Event()

    def interrupt() -> None:
        timed_out.set()
        con.interrupt()

    timer = threading.Timer(limits.timeout_s, interrupt)
    timer.start()
    try:
        # Bound, not run yet.
        if over_totals is not None:
            statement = over_totals[1]
        relation = con.sql(statement)
        answer = Answer(
            con,
            relation,
            bounded_values(con, statement, relation),
            max_rows=limits.max_rows,
            max_bytes=limits.max_bytes,
            timeout_s=limits.timeout_s,
            started=started,
            timed_out=timed_out,
        )
    except (duckdb.Error, pa.ArrowException, OSError) as error:
        timer.cancel()
        con.close()
        if timed_out.is_set():
            raise QueryTimedOut(
                f"The query ran longer than {limits.timeout_s:g} s and was stopped; narrow it "
                "(a WHERE on rank, name or time) or aggregate."
            ) from None
        raise QueryFailed(str(error)) from None
    answer.on_close.append(timer.cancel)
    answer.read_from = "events" if over_totals is None else "totals"
    return answer
