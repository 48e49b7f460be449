"""A rank's parts (the collector's chunks) merged into one trace for the analyses."""

from collections import Counter

import pytest

from profiler_app.analysis import RankTrace, analyze
from profiler_app.insights.inputs import merge
from profiler_app.traces import ingest_trace
from tests.insights.converted import read_converted
from tests.traces.expected import DATA

CHUNKS = sorted((DATA / "h100_collector").glob("*.pcol"))


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    work = tmp_path_factory.mktemp("chunks")
    stores = []
    for i, path in enumerate(CHUNKS):
        ingest_trace(path, "collector", work / str(i))
        stores.append(RankTrace.from_store(0, work / str(i)))
    return stores


def test_it_merges_the_chunks_into_one_strings_table(parts):
    merged = merge(0, parts)
    assert len(set(merged.strings)) == len(merged.strings)
    expected: Counter = Counter()
    for part in parts:  # each chunk by its own strings table
        expected.update(part.names[part.gpu_ops["name"].to_numpy()])
    assert Counter(merged.names[merged.gpu_ops["name"].to_numpy()]) == expected
    assert sum(expected.values()) == 3_456


def test_the_analyses_run_on_the_merged_chunks(parts):
    merged = merge(0, parts)
    result = analyze([merged])
    # The chunks are of the first format: the analyses count the GPU ops launched in the steps
    # Kineto recorded, 4 of each chunk's (not the copy each launches just before the first).
    assert result.kernels["count"].sum() == len(read_converted(CHUNKS).gpu_ops) == 3_444
    assert result.launch_findings["launches"].sum() > 0
    assert (result.idle["idle_ns"] >= 0).all()
