"""The console's sandbox, on two ranks' real stores: only one SELECT runs, it reads only the
stores it was given, and a runaway query stops at the time bound."""

import time
from pathlib import Path

import pytest

from profiler_app.sql.pure.console import (
    Limits,
    QueryFailed,
    QueryRefused,
    QueryTimedOut,
    StorePart,
)
from tests.sql.answers import run_query

RANKS = ["multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz"]


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    from profiler_app.traces import ingest_trace
    from tests.traces.expected import DATA

    root = Path(tmp_path_factory.mktemp("sql"))
    parts = []
    for rank, trace in enumerate(RANKS):
        ingest_trace(DATA / trace, "kineto", root / f"rank-{rank}")
        parts.append(StorePart(rank + 1, "node-a", rank, root / f"rank-{rank}"))
    return parts


def refused(parts, query: str) -> str:
    with pytest.raises((QueryRefused, QueryFailed)) as error:
        run_query(parts, query)
    return str(error.value)


def test_it_reads_the_stores_it_was_given(stores):
    result = run_query(stores, "select rank, count(*) as n from events group by rank order by 1")
    assert result.columns == ["rank", "n"] and result.types == ["INTEGER", "BIGINT"]
    assert [row[0] for row in result.rows] == [0, 1] and not result.truncated


@pytest.mark.parametrize(
    "query",
    [
        "select * from read_parquet('/etc/passwd')",
        "select * from read_csv('/etc/passwd')",
        "select * from read_text('/etc/passwd')",
        "select * from glob('/*')",
        "select * from read_parquet('https://example.com/x.parquet')",
    ],
)
def test_it_reads_no_other_file(stores, query):
    assert "file system operations are disabled" in refused(stores, query)


def test_it_reads_no_other_jobs_store(stores):
    mine, other = stores[:1], stores[1]
    other_events = other.directory / "events.parquet"
    assert "file system operations are disabled" in refused(
        mine, f"select count(*) from read_parquet('{other_events}')"
    )
    escaped = mine[0].directory / ".." / other.directory.name / "events.parquet"
    assert "file system operations are disabled" in refused(
        mine, f"select count(*) from read_parquet('{escaped}')"
    )


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("COPY (select 1) TO '/tmp/out.csv'", "COPY"),
        ("ATTACH '/tmp/other.duckdb'", "ATTACH"),
        ("INSTALL httpfs", "LOAD"),
        ("LOAD httpfs", "LOAD"),
        ("SET enable_external_access = true", "SET"),
        ("RESET lock_configuration", "SET"),
        ("PRAGMA version", "PRAGMA"),
        ("CALL pragma_version()", "CALL"),
        ("create table t as select 1", "CREATE"),
        ("DELETE FROM events", "DELETE"),
        ("EXPORT DATABASE '/tmp/x'", "EXPORT"),
    ],
)
def test_it_runs_nothing_but_select(stores, query, kind):
    message = refused(stores, query)
    assert message.startswith("Only SELECT queries can run here") and kind in message


def test_it_runs_one_statement(stores):
    assert refused(stores, "select 1; select 2") == "Send one statement at a time."
    assert refused(stores, "  ") == "The query is empty."
    assert "syntax error" in refused(stores, "selec 1")


def test_it_keeps_the_configuration_locked(stores):
    # A query() table function still answers only SELECTs, under the same lock.
    message = refused(stores, "select * from query('SET threads = 8')")
    assert "locked" in message or "SELECT" in message
    assert run_query(stores, "select current_setting('enable_external_access')").rows == [[False]]
    assert run_query(stores, "select current_setting('lock_configuration')").rows == [[True]]


def test_it_stops_a_runaway_query_at_the_time_bound(stores):
    started = time.monotonic()
    with pytest.raises(QueryTimedOut, match="longer than 1 s"):
        run_query(
            stores,
            "select count(*) from events a, events b, range(1000) c where a.dur_ns + c.range = -b.dur_ns",
            Limits(timeout_s=1.0),
        )
    # Stopped, not run out: the join alone would take hours (generous for a busy machine).
    assert time.monotonic() - started < 30


def test_it_caps_the_rows(stores):
    result = run_query(stores, "select * from range(100)", Limits(max_rows=10))
    assert len(result.rows) == 10 and result.truncated
    result = run_query(stores, "select * from range(10)", Limits(max_rows=10))
    assert len(result.rows) == 10 and not result.truncated


def test_it_bounds_memory(stores):
    message = refused(stores, "select list(range) from range(100000000)")
    assert "Out of Memory" in message
