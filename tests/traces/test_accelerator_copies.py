"""Copies on other accelerators: ROCm states a copy's size only on the runtime call that
enqueued it; every figure is computed here from the raw JSON."""

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from profiler_app.analysis import RankTrace
from profiler_app.analysis.counters import (
    memory_bandwidth_series,
    memory_bandwidth_summary,
)
from profiler_app.sql.pure.console import StorePart
from profiler_app.traces import Limits, ingest_trace
from profiler_app.traces.kineto_chunk import decode_chunk
from tests.sql.answers import run_query
from tests.traces.expected import DATA
from tracefmt.kinds import EventKind, MemcpyKind

AMD = "amd_mi250_small.json.gz"


def raw_copies() -> dict[int, dict]:
    """correlation -> bytes (the call's args.size), dur_ns and direction of each copy."""
    with gzip.open(DATA / AMD, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    sizes = {
        e["args"]["correlation"]: int(e["args"]["size"])
        for e in events
        if e.get("cat") == "cuda_runtime" and "size" in e.get("args", {})
    }
    return {
        e["args"]["correlation"]: {
            "bytes": sizes[e["args"]["correlation"]],
            "dur_ns": round(e["dur"] * 1000),
            "kind": e["args"]["kind"],
        }
        for e in events
        if e.get("cat") == "gpu_memcpy"
    }


@pytest.fixture(scope="module")
def amd_store(tmp_path_factory) -> Path:
    store = Path(tmp_path_factory.mktemp("amd")) / "store"
    ingest_trace(DATA / AMD, "kineto", store)
    return store


def test_it_stores_each_rocm_copys_bytes_from_its_call(amd_store):
    raw = raw_copies()
    assert [c["bytes"] for c in raw.values()] == [2560, 2560]
    events = RankTrace.from_store(0, amd_store).events
    copies = events[events["kind"] == EventKind.GPU_MEMCPY].set_index("correlation")
    assert sorted(copies.index) == sorted(raw)
    for correlation, copy in raw.items():
        row = copies.loc[correlation]
        assert row["bytes"] == copy["bytes"]
        assert row["dur_ns"] == copy["dur_ns"]
        assert row["memcpy_kind"] == MemcpyKind.HTOD
        assert row["bandwidth_gbps"] == copy["bytes"] / copy["dur_ns"]


def test_the_sql_events_view_shows_the_copy_sizes(amd_store):
    raw = raw_copies()
    result = run_query(
        [StorePart(1, "node-a", 0, amd_store)],
        "select correlation, bytes, bandwidth_gbps from events "
        "where kind = 'gpu_memcpy' order by correlation",
    )
    assert result.rows == [
        [c, raw[c]["bytes"], raw[c]["bytes"] / raw[c]["dur_ns"]] for c in sorted(raw)
    ]


def test_the_bandwidth_analysis_reads_rocm_copies(amd_store):
    raw = raw_copies()
    summary = memory_bandwidth_summary(
        memory_bandwidth_series([RankTrace.from_store(0, amd_store)])
    )
    row = summary.set_index(["rank", "kind"]).loc[(0, "Memcpy HtoD")]
    rates = np.array([c["bytes"] / c["dur_ns"] for c in raw.values()])
    # The two copies do not overlap: one point per copy.
    assert row["count"] == len(rates)
    assert row["min"] == rates.min()
    assert row["max"] == rates.max()
    assert row["mean"] == pytest.approx(rates.mean(), rel=1e-12)


# A ROCm copy call (its size in args) and the copy it enqueued (no size of its own).
CALL = {
    "ph": "X",
    "cat": "cuda_runtime",
    "name": "hipMemcpyWithStream",
    "pid": 1,
    "tid": 1,
    "ts": 10,
    "dur": 5,
    "args": {"correlation": 7, "size": "4096"},
}
COPY = {
    "ph": "X",
    "cat": "gpu_memcpy",
    "name": "Memcpy DtoH (Device -> Host)",
    "pid": 2,
    "tid": 0,
    "ts": 12,
    "dur": 2,
    "args": {"correlation": 7, "device": 0, "stream": 0, "kind": "DtoH"},
}


def test_a_call_in_another_slice_still_sizes_the_copy(tmp_path):
    """Decoded apart, the copy keeps no size (the bandwidth analysis looks the call up again);
    decoded together, it takes the call's."""
    alone = decode_chunk(json.dumps([COPY]).encode(), 0)
    assert alone.columns["bytes"].tolist() == [-1]
    together = decode_chunk(json.dumps([CALL, COPY]).encode(), 0)
    assert together.columns["bytes"].tolist() == [4096, 4096]
    assert together.columns["bandwidth_gbps"][1] == 4096 / 2000


def test_a_copy_is_sized_by_its_call_in_another_slice_of_the_file(tmp_path):
    """A large trace is decoded in slices, and Kineto writes the host's calls long before the
    device's copies: the store still gives each copy its call's size (and the bandwidth)."""
    calls = [
        CALL | {"ts": 10 * i, "args": {"correlation": i, "size": str(1024 * i)}}
        for i in range(1, 9)
    ]
    padding = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": f"aten::op{i % 50}",
            "pid": 1,
            "tid": 1,
            "ts": 100 + i,
            "dur": 1,
        }
        for i in range(20_000)
    ]
    copies = [
        COPY | {"ts": 30_000 + 10 * i, "dur": i, "args": COPY["args"] | {"correlation": i}}
        for i in range(1, 9)
    ]
    path = tmp_path / "rocm.json"
    path.write_text(json.dumps({"traceEvents": calls + padding + copies}))
    chunk_bytes = 64 << 10
    assert path.stat().st_size > 10 * chunk_bytes  # the calls and the copies are slices apart
    store = tmp_path / "store"
    ingest_trace(path, "kineto", store, limits=Limits(chunk_bytes=chunk_bytes))
    events = RankTrace.from_store(0, store).events
    stored = events[events["kind"] == EventKind.GPU_MEMCPY]
    assert sorted(
        zip(stored["correlation"], stored["bytes"], stored["bandwidth_gbps"], strict=True)
    ) == [(i, 1024 * i, 1024 * i / (1000 * i)) for i in range(1, 9)]
