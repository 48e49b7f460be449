"""Group-and-aggregate queries answered from the parts' event totals: every answer equals the
same query over the events (columns, types and rows), on two ranks of a real trace, a real H100
collector chunk and a real MI250 trace in one job; queries whose meaning depends on single
events still read the events."""

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from profiler_app.sql.pure.console import StorePart, write_totals
from profiler_app.traces.store_layout import TOTALS_FILE
from tests.sql.answers import run_query
from tests.traces.expected import DATA, expected

SOURCES = [
    ("multirank_sampled/rank-0.json.gz", "kineto"),
    ("multirank_sampled/rank-1.json.gz", "kineto"),
    ("h100_collector/chunk-003.pcol", "collector"),
    ("amd_mi250_small.json.gz", "kineto"),
]


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    from profiler_app.traces import ingest_trace

    root = Path(tmp_path_factory.mktemp("totals"))
    out = []
    for rank, (trace, kind) in enumerate(SOURCES):
        ingest_trace(DATA / trace, kind, root / f"rank-{rank}")
        write_totals(root / f"rank-{rank}")  # as the worker does once the store is written
        out.append(StorePart(rank + 1, f"node-{rank // 2}", rank, root / f"rank-{rank}"))
    return out


SAME_FROM_TOTALS = [
    "SELECT name, count(*), sum(dur_ns) FROM events GROUP BY name ORDER BY ALL",
    "SELECT rank, kind, count(*) AS events, sum(dur_ns) AS total_ns FROM events "
    "GROUP BY rank, kind ORDER BY rank, total_ns DESC, kind",
    "SELECT name, count(*) AS launches, sum(dur_ns) AS total_ns, avg(dur_ns) AS avg_ns "
    "FROM kernels GROUP BY name ORDER BY total_ns DESC, name LIMIT 20",
    "SELECT count(*) FROM events",
    "SELECT count(*), sum(dur_ns) FROM events WHERE rank = 99",  # no event: 0 and NULL
    "SELECT e.rank, min(e.dur_ns), max(self_ns), sum(bytes), count(bytes), avg(bytes), "
    "min(name), max(e.kind) FROM events e GROUP BY e.rank ORDER BY 1",
    "SELECT memcpy_kind, sum(bytes) / 1e9 AS gb, count(dur_ns) FROM events "
    "WHERE kind LIKE 'gpu_mem%' GROUP BY ALL HAVING count(*) > 1 ORDER BY ALL",
    "SELECT events.captured, count() AS n_events FROM events "
    "GROUP BY ROLLUP (events.captured) ORDER BY ALL",
    "SELECT node, device, stream, sum(dur_ns) FROM kernels GROUP BY ALL ORDER BY ALL",
    "SELECT lower(name) AS n2, collective, max(dur_ns) - min(dur_ns) AS spread FROM events "
    "WHERE name ILIKE '%nccl%' OR collective IS NOT NULL GROUP BY ALL ORDER BY ALL",
    "SELECT track, CASE WHEN kind = 'kernel' THEN 'gpu' ELSE 'cpu' END AS side, "
    "CAST(sum(self_ns) AS DOUBLE) / nullif(sum(dur_ns), 0) AS self_share FROM events "
    "WHERE part BETWEEN 1 AND 3 GROUP BY ALL ORDER BY ALL",
    "SELECT name FROM kernels GROUP BY name ORDER BY name",
]


def answers(parts, query):
    return run_query(parts, query), run_query(parts, query, use_totals=False)


@pytest.mark.parametrize("query", SAME_FROM_TOTALS)
def test_a_grouped_query_reads_the_totals_and_answers_as_the_events_do(parts, query):
    totals, events = answers(parts, query)
    assert (totals.read_from, events.read_from) == ("totals", "events")
    assert totals.columns == events.columns and totals.types == events.types
    assert totals.rows == events.rows and totals.rows


NOT_FROM_TOTALS = [
    # A time range, a single event's value, a per-event row: they need the events.
    "SELECT name, count(*) FROM events WHERE start_ns > 0 GROUP BY name ORDER BY ALL",
    "SELECT name, count(*) FROM events WHERE dur_ns > 1000 GROUP BY name ORDER BY ALL",
    "SELECT name, dur_ns FROM events ORDER BY dur_ns DESC, name LIMIT 5",
    "SELECT * FROM events ORDER BY start_ns LIMIT 3",
    "SELECT step, count(*) FROM events GROUP BY step ORDER BY ALL",
    # Aggregates that do not add up from per-group totals.
    "SELECT name, median(dur_ns) FROM kernels GROUP BY name ORDER BY ALL",
    "SELECT count(DISTINCT name) FROM events",
    "SELECT sum(rank) FROM events",
    "SELECT string_agg(name, ',') FROM kernels WHERE rank = 0 AND dur_ns > 10**9",
    "SELECT geomean(dur_ns) FROM kernels",
    "SELECT count(*) FILTER (WHERE kind = 'kernel') FROM events",
    "SELECT sum(dur_ns // 1000) FROM events",
    "SELECT count(name) FROM events",  # null names are not counted: not n
    # A window over rows, a subquery, a join, a CTE.
    "SELECT DISTINCT rank % 2 AS parity, count(*) OVER () AS w FROM events GROUP BY rank "
    "ORDER BY ALL",
    "SELECT count(*) FROM events WHERE rank IN (SELECT rank FROM steps)",
    "SELECT k.rank, count(*) FROM kernels k JOIN tracks t USING (part, track) GROUP BY 1 "
    "ORDER BY 1",
    "WITH k AS (SELECT * FROM kernels) SELECT count(*) FROM k",
    "SELECT count(*) FROM steps",
    # A select alias named like a column of the totals.
    "SELECT name, count(*) AS n FROM events GROUP BY name HAVING n > 1 ORDER BY ALL",
]


@pytest.mark.parametrize("query", NOT_FROM_TOTALS)
def test_a_query_that_needs_single_events_reads_the_events(parts, query):
    result = run_query(parts, query)
    assert result.read_from == "events"
    assert result.rows


def test_the_totals_count_every_event_in_a_few_rows_per_name(parts):
    for part, (trace, _) in zip(parts, SOURCES, strict=True):
        totals = pq.read_table(part.directory / TOTALS_FILE)
        events = pq.ParquetFile(part.directory / "events.parquet").metadata.num_rows
        assert sum(totals.column("n").to_pylist()) == events, trace
        if trace.startswith("multirank"):  # the larger ones
            assert totals.num_rows * 10 < events, (trace, totals.num_rows, events)


def test_the_kernel_totals_equal_the_raw_json(parts):
    """Independent of the console: each kernel's count and time on rank 1, from the raw JSON."""
    raw = expected(SOURCES[1][0])
    result = run_query(
        parts,
        "SELECT name, count(*), sum(dur_ns), min(dur_ns), max(dur_ns) FROM kernels "
        "WHERE rank = 1 AND NOT (name LIKE 'Memcpy%' OR name LIKE 'Memset%') GROUP BY name",
    )
    assert result.read_from == "totals"
    got = {name: (n, total, low, high) for name, n, total, low, high in result.rows}
    want = {
        name: (n, raw.kernel_total_ns[name], raw.kernel_min_ns[name], raw.kernel_max_ns[name])
        for name, n in raw.kernel_count.items()
        if not name.startswith(("Memcpy", "Memset"))
    }
    assert got == want and len(got) > 10


def test_the_documented_columns_are_the_events_views(parts):
    """The rewrite tells columns from select aliases by the documented list: it must be the
    view's."""
    from profiler_app.sql.pure.console import SCHEMA

    view = run_query(parts, "SELECT * FROM events LIMIT 1").columns
    assert set(view) == {column for column, _, _ in SCHEMA["events"]["columns"]}


@pytest.mark.parametrize("view", ["events", "kernels"])
def test_the_totals_connection_binds_a_query_over_the_views_columns(parts, view):
    """Before the rewrite a query is bound over empty views of the documented columns (to
    name the answer's columns): they must be the real views' names and types (in any order: a
    query naming no column, ``*``, reads the events)."""
    from profiler_app.sql.pure.console import Limits, connect

    real = run_query(parts, f"SELECT * FROM {view} LIMIT 0", use_totals=False)
    con = connect(parts, Limits(), totals_only=True)
    try:
        stand_in = con.sql(f"SELECT * FROM {view}")
        got = dict(zip(stand_in.columns, map(str, stand_in.types), strict=True))
        assert got == dict(zip(real.columns, real.types, strict=True))
    finally:
        con.close()


def test_a_query_answered_from_the_totals_reads_no_part_s_strings_or_events(parts, tmp_path):
    """Over a thousand parts, reading every part's strings took most of a second: a query
    the totals answer must not touch them (here they are gone, and it still answers)."""
    import dataclasses
    import shutil

    stripped = []
    for part in parts:
        copy = tmp_path / part.directory.name
        shutil.copytree(part.directory, copy)
        (copy / "strings.parquet").unlink()
        stripped.append(dataclasses.replace(part, directory=copy))
    query = SAME_FROM_TOTALS[0]
    assert run_query(stripped, query).rows == run_query(parts, query, use_totals=False).rows
    with pytest.raises(Exception, match="strings.parquet"):
        run_query(stripped, query, use_totals=False)
