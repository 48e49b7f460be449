"""A store of the previous format (no manifest, no totals, no index, events without the event
model's columns) is read as it is by the timeline reader and the SQL console, with its folder
read-only (a user other than root cannot write it; for root, each file's size and time are
compared before and after); the store sweep alone upgrades it, to the store the ingest writes
today."""

import json
import os
import shutil
import stat
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from profiler_app.analysis.events import ANALYSIS_COLUMNS, RankTrace
from profiler_app.profiles.models import PartSummary
from profiler_app.profiles.store_products import needs_upgrade, upgrade_stores
from profiler_app.sql import logic as sql_logic
from profiler_app.timeline import logic as timeline_logic
from profiler_app.timeline.pure.index import INDEX_DIR_NAME
from profiler_app.traces.event_model import MODEL_COLUMNS
from profiler_app.traces.store_layout import (
    EVENTS_FILE,
    FORMAT_VERSION,
    MANIFEST_FILE,
    TOTALS_FILE,
    StoreAwaitsUpgrade,
)
from profiler_app.traces.timeline_read import TimelineReader
from tests.sql.answers import run_query
from tests.timeline.jobs import parse_job
from tests.traces.expected import expected

pytestmark = [pytest.mark.django_db]

TRACE = "multirank_sampled/rank-0.json.gz"


def _previous_format(store: Path) -> dict:
    """Takes away what the current format adds; the model columns it held, to compare."""
    events = pq.read_table(store / EVENTS_FILE)
    model = {name: events.column(name).to_numpy() for name in MODEL_COLUMNS}
    pq.write_table(events.drop_columns(list(MODEL_COLUMNS)), store / EVENTS_FILE)
    (store / MANIFEST_FILE).unlink()
    (store / TOTALS_FILE).unlink()
    shutil.rmtree(store / INDEX_DIR_NAME)
    return model


def _files(store: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(store)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(store.rglob("*"))
    }


def _read_only(store: Path, on: bool) -> None:
    for path in [store, *store.rglob("*")]:
        mode = path.stat().st_mode
        writable = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
        os.chmod(path, mode & ~writable if on else mode | stat.S_IWUSR)


@pytest.fixture
def old_store(user):
    job = parse_job(user, "previous-format", [("algo-1", 0, TRACE)])
    summary = PartSummary.objects.get(job=job)
    store = summary.fetch_store()
    assert json.loads((store / MANIFEST_FILE).read_text())["format"] == FORMAT_VERSION
    model = _previous_format(store)
    timeline_logic.part_index.cache_clear()
    _read_only(store, True)
    try:
        yield job, summary, store, model
    finally:
        _read_only(store, False)


def test_readers_answer_from_a_read_only_store_of_the_previous_format(api, old_store):
    job, summary, store, _ = old_store
    raw = expected(TRACE)
    before = _files(store)

    reader = TimelineReader(store)
    assert reader.n_events == len(raw.events) == summary.n_events
    starts = reader.read_all(["start_ns"]).column(0).to_numpy()
    assert sorted(starts.tolist()) == sorted(start for start, _, _ in raw.events)
    with pytest.raises(StoreAwaitsUpgrade) as awaits:
        reader.column("self_ns")
    assert awaits.value.missing == ["self_ns"]
    with pytest.raises(StoreAwaitsUpgrade) as awaits:  # the analyses read no column first
        RankTrace.from_store(0, store)
    assert set(awaits.value.missing) == set(MODEL_COLUMNS) & set(ANALYSIS_COLUMNS)

    parts = sql_logic.job_parts(job)
    answer = run_query(parts, "SELECT count(*), sum(dur_ns), count(self_ns) FROM events")
    assert answer.read_from == "events"  # no totals yet: the events answer, the same
    assert answer.rows == [[len(raw.events), sum(d for _, d, _ in raw.events), 0]]
    kernel = max(raw.kernel_count, key=lambda n: raw.kernel_total_ns[n])
    quoted = kernel.replace("'", "''")
    answer = run_query(parts, f"SELECT count(*) FROM kernels WHERE name = '{quoted}'")
    assert answer.rows == [[raw.kernel_count[kernel]]]

    # The timeline waits for the sweep rather than building an index in a request; the call
    # tree, which reads the event model's nesting, says the store awaits its upgrade.
    assert api.get(f"/api/jobs/{job.id}/timeline/tracks/").status_code == 503
    tree = api.get(f"/api/jobs/{job.id}/calltree/")
    assert (tree.status_code, tree.json()["code"]) == (503, "store_awaits_upgrade")
    assert _files(store) == before  # nothing written, nothing replaced


def test_the_sweep_upgrades_it_to_the_store_the_ingest_writes(api, old_store):
    job, summary, store, model = old_store
    raw = expected(TRACE)
    assert needs_upgrade(summary.store)
    _read_only(store, False)

    assert upgrade_stores() == [summary.part_id]
    assert upgrade_stores() == []  # current: read its manifest and index meta only
    assert not needs_upgrade(summary.store)
    manifest = json.loads((store / MANIFEST_FILE).read_text())
    assert manifest == {"format": FORMAT_VERSION, "model_columns": list(MODEL_COLUMNS)}
    events = pq.read_table(store / EVENTS_FILE)
    for name, values in model.items():  # the parse's model: this trace was recorded whole
        assert (events.column(name).to_numpy() == values).all(), name

    answer = run_query(
        sql_logic.job_parts(job), "SELECT count(*), count(self_ns) FROM events GROUP BY ALL"
    )
    assert answer.read_from == "totals"
    assert answer.rows == [[len(raw.events), len(raw.events)]]
    assert api.get(f"/api/jobs/{job.id}/timeline/tracks/").status_code == 200
    assert api.get(f"/api/jobs/{job.id}/calltree/").status_code == 200
