"""A time filter on ``events`` reads only the row groups of its range: the store cuts its row
groups at track ends, so each group's start_ns min/max covers one stretch of one track, and the
view passes ``start_ns`` through untouched, so DuckDB skips every other group. A store written
before (groups across tracks) answers the same, reading more, and is left as it was."""

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from profiler_app.sql.pure.console import Limits, StorePart, connect
from profiler_app.traces import timeline_store
from profiler_app.traces.model import EventBatch
from profiler_app.traces.timeline_store import EVENTS_FILE, PARQUET_OPTIONS, TimelineWriter
from tests.sql.answers import run_query
from tracefmt.columns import empty_columns
from tracefmt.kinds import EventKind

BUSY_EVENTS = 4_500  # per busy thread: one every µs, 500 ns long
SPARSE_EVENTS = 10  # per sparse thread: one every 450 µs, over the same 4.5 ms
T0_NS = 1_700_000_000_000_000_000
# 1 % of the part's time, inside the third thousand of each busy thread's events.
LO_NS, HI_NS = T0_NS + 2_100_000, T0_NS + 2_145_000
WINDOW = f"start_ns BETWEEN {LO_NS} AND {HI_NS}"
# Times from the part's start: small enough to come back as JSON numbers.
ROWS = f"SELECT part, track, name, start_ns - {T0_NS} AS at_ns, dur_ns FROM events"


@pytest.fixture
def store(tmp_path, monkeypatch):
    """Two busy threads, a busy GPU stream and two sparse threads, written with row groups of
    1,000 rows."""
    monkeypatch.setattr(timeline_store, "ROW_GROUP_ROWS", 1000)
    tracks, starts = [], []
    for track in range(3):
        tracks.append(np.full(BUSY_EVENTS, track))
        starts.append(T0_NS + 1000 * np.arange(BUSY_EVENTS))
    for track in (3, 4):
        tracks.append(np.full(SPARSE_EVENTS, track))
        starts.append(T0_NS + 450_000 * np.arange(SPARSE_EVENTS))
    n = sum(len(t) for t in tracks)
    columns = empty_columns(n)
    columns["track"] = np.concatenate(tracks).astype(np.int32)
    columns["start_ns"] = np.concatenate(starts)
    columns["dur_ns"] = np.full(n, 500)
    columns["name"] = (1 + np.arange(n) % 3).astype(np.int32)
    columns["kind"] = np.where(columns["track"] == 2, EventKind.KERNEL, EventKind.CPU_OP)
    order = np.random.default_rng(5).permutation(n)  # arrives in any order
    writer = TimelineWriter(tmp_path / "part", run_rows=4000)
    for lo in range(0, n, 3000):
        writer.add(EventBatch({c: v[order[lo : lo + 3000]] for c, v in columns.items()}))
    labels = pd.DataFrame(
        {
            "track": range(5),
            "label": [f"thread {i}" for i in range(5)],
            "on_device": [False, False, True, False, False],
            "pid": 1,
            "tid": range(5),
        }
    )
    writer.finish(0, ["", "forward", "backward", "optimizer"], labels)
    return tmp_path / "part"


def group_sizes(directory) -> list[int]:
    meta = pq.read_metadata(directory / EVENTS_FILE)
    return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]


def rows_of_groups_in_window(directory) -> int:
    """Rows of the groups whose start_ns min/max meets the window (all a reader must read)."""
    meta = pq.read_metadata(directory / EVENTS_FILE)
    at = meta.schema.to_arrow_schema().get_field_index("start_ns")
    rows = 0
    for i in range(meta.num_row_groups):
        stats = meta.row_group(i).column(at).statistics
        if stats.min <= HI_NS and stats.max >= LO_NS:
            rows += meta.row_group(i).num_rows
    return rows


def groups_scanned(parts: list[StorePart], query: str) -> tuple[int, int]:
    """(row groups DuckDB read, row groups it had) for ``query`` over the console's views."""
    con = connect(parts, Limits())
    try:
        con.enable_profiling()
        con.sql(query).fetchall()
        profile = json.loads(con.get_profiling_information())["query"]
    finally:
        con.close()
    return profile["total_row_groups_scanned"], profile["total_row_groups_to_scan"]


def filtered_in_python(parts: list[StorePart]) -> list[list]:
    every = run_query(parts, ROWS, Limits(max_rows=20_000)).rows
    return sorted(row for row in every if LO_NS - T0_NS <= row[3] <= HI_NS - T0_NS)


def test_it_reads_only_the_row_groups_of_the_time_range(store):
    # Each busy thread: four groups of 1,000 and its last 500; the sparse threads share one.
    assert group_sizes(store) == [1000, 1000, 1000, 1000, 500] * 3 + [20]
    parts = [StorePart(7, "node-a", 0, store)]

    query = f"SELECT count(*), sum(dur_ns) FROM events WHERE {WINDOW}"
    # The third group of each busy thread, and the sparse threads' group (whose events span
    # the part, none inside the window): 3,020 of 13,520 rows.
    assert groups_scanned(parts, query) == (4, 16)
    assert rows_of_groups_in_window(store) == 3 * 1000 + 20
    assert run_query(parts, query).rows == [[3 * 46, 3 * 46 * 500]]

    rows = run_query(parts, f"{ROWS} WHERE {WINDOW}")
    assert sorted(rows.rows) == filtered_in_python(parts)
    assert len(rows.rows) == 138 and rows.read_from == "events"


def test_the_kernels_view_keeps_the_filter_on_start_ns(store):
    parts = [StorePart(7, "node-a", 0, store)]
    query = f"SELECT count(*) FROM kernels WHERE {WINDOW}"
    # Only the stream's third group: the threads' groups hold no kernel (their kind's min/max
    # say so) and the stream's others lie outside the window.
    assert groups_scanned(parts, query) == (1, 16)
    assert run_query(parts, query).rows == [[46]]


def test_a_store_with_groups_across_tracks_answers_the_same_and_is_not_rewritten(store):
    """The layout stores had before: groups of 1,000 rows whatever their tracks."""
    events = pq.read_table(store / EVENTS_FILE)
    pq.write_table(events, store / EVENTS_FILE, row_group_size=1000, **PARQUET_OPTIONS)
    assert group_sizes(store) == [1000] * 13 + [520]
    before = (store / EVENTS_FILE).read_bytes()
    parts = [StorePart(7, "node-a", 0, store)]

    query = f"SELECT count(*), sum(dur_ns) FROM events WHERE {WINDOW}"
    # Two groups mix a thread's end with the next thread's start (or the sparse threads): they
    # span the part, and are read too.
    assert groups_scanned(parts, query) == (5, 14)
    assert rows_of_groups_in_window(store) == 4 * 1000 + 520
    assert run_query(parts, query).rows == [[138, 138 * 500]]
    rows = run_query(parts, f"{ROWS} WHERE {WINDOW}")
    assert sorted(rows.rows) == filtered_in_python(parts)
    assert (store / EVENTS_FILE).read_bytes() == before
