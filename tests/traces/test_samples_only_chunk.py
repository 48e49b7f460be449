"""A collector chunk cut before any annotation ended holds samples but no events."""

import numpy as np

from profiler_app.analysis.part_figures import store_part_figures
from profiler_app.timeline.pure.index import ensure_index, open_index
from profiler_app.traces import ingest_trace
from profiler_app.traces.window import COMPLETE_STEPS, WHOLE_TRACE
from tests.traces.synthetic import chunk_meta
from tracefmt.chunk import empty_events, write_chunk

T0_NS = 1_700_000_000_000_000_000


def samples_only_chunk(path):
    samples = {
        "s_kind": np.array([3, 3], np.uint8),
        "s_device": np.array([0, 1], np.int16),
        "s_name": np.array([0, 0], np.uint32),
        "s_time_ns": np.array([T0_NS, T0_NS + 100_000_000], np.int64),
        "s_value": np.array([10.0, 20.0]),
    }
    meta = chunk_meta(job="j", hostname="h", pid=1, created_ns=T0_NS, torch_version=None)
    write_chunk(path, meta | {"cuda": False, "sources": {}}, [""], empty_events(), samples)
    return path


def test_it_ingests_a_chunk_with_samples_and_no_events(tmp_path):
    result = ingest_trace(samples_only_chunk(tmp_path / "c.pcol"), "collector", tmp_path / "store")
    assert result.store.n_events == 0
    assert len(result.store.tracks) == 0
    cpu = result.aggregates.series
    assert sorted(cpu.loc[cpu["metric"] == "cpu_util_pct", "value"]) == [10.0, 20.0]


def test_its_timeline_index_is_built_and_empty(tmp_path):
    """The worker indexes every store it writes: a part without events has an empty timeline
    (a training job's first chunk, cut before any step ended, failed its parse here)."""
    ingest_trace(samples_only_chunk(tmp_path / "c.pcol"), "collector", tmp_path / "store")
    assert ensure_index(tmp_path / "store")
    index = open_index(tmp_path / "store")
    assert len(index.lanes) == 0


def test_its_history_figures_are_empty(tmp_path):
    """What the worker computes of each part for the run history: nothing, and no failure."""
    ingest_trace(samples_only_chunk(tmp_path / "c.pcol"), "collector", tmp_path / "store")
    found = store_part_figures(tmp_path / "store", 0, 1, [COMPLETE_STEPS, WHOLE_TRACE])
    for figures in found.values():
        assert figures.host_wait_ns == 0
        assert figures.operators.empty
