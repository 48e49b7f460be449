"""A rank's parts (the collector's chunks) merged into one trace for the analyses."""

from collections import Counter

import numpy as np
import pytest

from collector.chunk_format import EventKind, read_chunk
from profiler_app.insights.analyses import RankTrace, analyze
from profiler_app.reports.logic import merge
from profiler_app.traces import ingest_trace
from tests.traces.expected import DATA

CHUNKS = sorted((DATA / "h100_collector").glob("*.pcol"))


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    work = tmp_path_factory.mktemp("chunks")
    parts = []
    for i, path in enumerate(CHUNKS):
        ingest_trace(path, "collector", work / str(i))
        parts.append(RankTrace.from_store(0, work / str(i)))
    return merge(0, parts)


def test_it_merges_the_chunks_into_one_strings_table(merged):
    expected: Counter = Counter()
    for path in CHUNKS:
        chunk = read_chunk(path)
        ev = chunk.events
        gpu = np.isin(ev["ev_kind"], [EventKind.KERNEL, EventKind.GPU_MEMCPY, EventKind.GPU_MEMSET])
        expected.update(chunk.strings[n] for n in ev["ev_name"][gpu])
    assert len(set(merged.strings)) == len(merged.strings)
    ops = merged.gpu_ops
    assert Counter(merged.names[ops["name"].to_numpy()]) == expected


def test_the_analyses_run_on_the_merged_chunks(merged):
    result = analyze([merged])
    assert result.kernels["count"].sum() == len(merged.gpu_ops)
    assert result.launch_findings["launches"].sum() > 0
    assert (result.idle["idle_ns"] >= 0).all()
