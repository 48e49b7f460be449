"""A collector chunk cut before any annotation ended holds samples but no events."""

import numpy as np

from profiler_app.traces import ingest_trace
from tracefmt.chunk import empty_events, write_chunk

T0_NS = 1_700_000_000_000_000_000


def test_it_ingests_a_chunk_with_samples_and_no_events(tmp_path):
    meta = {
        "format": "profiler-app-chunk",
        "version": 1,
        "job": "j",
        "node": "algo-1",
        "hostname": "h",
        "rank": 0,
        "local_rank": 0,
        "world_size": 1,
        "pid": 1,
        "seq": 0,
        "final": True,
        "created_ns": T0_NS,
        "torch_version": None,
        "cuda": False,
        "devices": [],
        "sources": {},
    }
    samples = {
        "s_kind": np.array([3, 3], np.uint8),
        "s_device": np.array([0, 1], np.int16),
        "s_name": np.array([0, 0], np.uint32),
        "s_time_ns": np.array([T0_NS, T0_NS + 100_000_000], np.int64),
        "s_value": np.array([10.0, 20.0]),
    }
    write_chunk(tmp_path / "c.pcol", meta, [""], empty_events(), samples)
    result = ingest_trace(tmp_path / "c.pcol", "collector", tmp_path / "store")
    assert result.store.n_events == 0
    assert len(result.store.tracks) == 0
    cpu = result.aggregates.series
    assert sorted(cpu.loc[cpu["metric"] == "cpu_util_pct", "value"]) == [10.0, 20.0]
