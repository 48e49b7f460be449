"""The export reads its events' arguments a row group at a time (memory stays a few row groups):
a store cut into many small row groups exports exactly what a one-group store does."""

import json

import pytest

from profiler_app.timeline.pure.export import chrome_trace
from profiler_app.timeline.pure.index import open_index
from profiler_app.timeline.pure.query import JobTimeline
from profiler_app.timeline.pure.tree import Part
from profiler_app.traces import ingest_trace, timeline_store
from tests.traces.expected import DATA

TRACE = "nccl_rank0.json.gz"  # 26,935 stored events: one row group by default


def exported(store) -> dict:
    job = JobTimeline([Part(1, "algo-1", 0, None, open_index(store))])
    return json.loads(b"".join(chrome_trace(job)))


def test_small_row_groups_export_the_same_trace(tmp_path, monkeypatch):
    ingest_trace(DATA / TRACE, "kineto", tmp_path / "whole")
    monkeypatch.setattr(timeline_store, "ROW_GROUP_ROWS", 1000)
    ingest_trace(DATA / TRACE, "kineto", tmp_path / "cut")
    meta = open_index(tmp_path / "cut").reader.events.metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert sum(sizes) == 26_935 and max(sizes) == 1000 and len(sizes) >= 27

    whole, cut = exported(tmp_path / "whole"), exported(tmp_path / "cut")
    assert len(cut["traceEvents"]) == len(whole["traceEvents"]) > 26_935
    key = lambda e: (e["ph"], e.get("pid"), e.get("tid"), e.get("ts", 0), e.get("name"))  # noqa: E731
    assert sorted(cut["traceEvents"], key=key) == sorted(whole["traceEvents"], key=key)
    kernels = [e for e in cut["traceEvents"] if e.get("cat") == "kernel"]
    assert all("correlation" in e["args"] for e in kernels)


@pytest.mark.parametrize("cached", [1, 2])
def test_it_keeps_only_a_few_row_groups(tmp_path, monkeypatch, cached):
    from profiler_app.timeline.pure import export

    monkeypatch.setattr(timeline_store, "ROW_GROUP_ROWS", 1000)
    monkeypatch.setattr(export._ArgRows, "CACHED_GROUPS", cached)
    ingest_trace(DATA / TRACE, "kineto", tmp_path / "cut")
    index = open_index(tmp_path / "cut")
    rows = export._ArgRows(index)
    taken = rows.take(index.store_row[:5000].astype("int64"))
    assert len(rows.groups) <= cached
    assert len(taken["correlation"]) == 5000
