"""The memory view's numbers for a real CPU training loop recorded with profile_memory=True,
against the raw JSON (``memory_expected``)."""

import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from profiler_app.traces import ingest_trace
from profiler_app.traces.memory import (
    MEMORY_FILE,
    NO_OPERATOR,
    NOT_RECORDED,
    EventFilter,
    downsample,
    read_memory_events,
    rebuilt_allocated,
)
from tests.traces.expected import DATA
from tests.traces.memory_expected import (
    MEMORY_TRACE,
    memory_expected,
    running_sum,
    write_without_totals,
)


@pytest.fixture(scope="module")
def parsed(tmp_path_factory):
    store = tmp_path_factory.mktemp("memory") / "store"
    return ingest_trace(DATA / MEMORY_TRACE, "kineto", store), store


@pytest.fixture(scope="module")
def raw():
    return memory_expected()


def test_it_finds_the_peak_and_the_operators_running_then(parsed, raw):
    result, _ = parsed
    [peak] = result.memory.peaks.to_dict("records")
    assert (peak["device_type"], peak["device_id"]) == (0, -1)
    assert peak["allocated"] == raw.peak_allocated == 1_723_440
    assert peak["time_ns"] == raw.peak_time_ns
    assert peak["reserved"] == raw.peak_reserved
    assert peak["events"] == len(raw.events) == 425
    assert peak["running"] == raw.running
    assert peak["running"][-1] == "aten::convolution_backward"


def test_it_ranks_the_top_allocators_as_the_raw_events_say(parsed, raw):
    result, _ = parsed
    ops = result.memory.operators.set_index("name")
    assert dict(ops["allocated_bytes"]) == dict(raw.allocated_bytes)
    assert dict(ops["allocations"]) == dict(raw.allocations)
    held = {name: n for name, n in ops["held_bytes"].items() if n}
    assert held == dict(raw.held_bytes)
    top = result.memory.operators.iloc[0]
    assert (top["name"], top["allocated_bytes"]) == ("aten::convolution_backward", 8_017_536)


def test_it_keeps_every_memory_event_with_its_operator(parsed, raw):
    _, store = parsed
    table = pq.read_table(store / MEMORY_FILE)
    assert table.column("time_ns").to_pylist() == [t for t, *_ in raw.events]
    assert table.column("bytes").to_pylist() == [b for _, b, _, _ in raw.events]
    count, frame = read_memory_events(store, EventFilter(), 0, 1000)
    assert count == 425
    assert frame["operator"].tolist() == [name for *_, name in raw.events]


def test_it_filters_memory_events_by_size_and_time(parsed, raw):
    _, store = parsed
    t0, t1 = raw.events[100][0], raw.events[300][0]
    where = EventFilter(min_bytes=100_000, start_ns=t0, end_ns=t1, device=(0, -1))
    count, frame = read_memory_events(store, where, 5, 10)
    wanted = [e for e in raw.events if abs(e[1]) >= 100_000 and t0 <= e[0] <= t1]
    assert count == len(wanted) > 15
    assert frame["time_ns"].tolist() == [e[0] for e in wanted[5:15]]
    assert read_memory_events(store, EventFilter(device=(1, 0)), 0, 10)[0] == 0


def test_it_never_loses_the_peak_when_down_sampling():
    rng = np.random.default_rng(7)
    times = np.cumsum(rng.integers(1, 1000, 100_000))
    allocated = rng.integers(0, 1 << 30, 100_000)
    curve = downsample(times, allocated, allocated // 2, points=300)
    assert len(curve) <= 300
    assert curve["allocated"].max() == allocated.max()
    assert curve["time_ns"].iloc[int(curve["allocated"].argmax())] == times[allocated.argmax()]
    assert curve["reserved"].max() == (allocated // 2).max()


def test_a_trace_without_memory_events_has_an_empty_memory_view(tmp_path):
    result = ingest_trace(DATA / "cpu_only_rank34.pt.trace.json.gz", "kineto", tmp_path / "s")
    assert result.memory.peaks.empty and result.memory.curve.empty
    count, frame = read_memory_events(tmp_path / "s", EventFilter(), 0, 10)
    assert count == 0 and frame.empty


def test_a_store_from_before_memory_events_reads_as_having_none(parsed, tmp_path):
    """Stores written before memory.parquet existed stay readable."""
    _, store = parsed
    old = tmp_path / "old"
    shutil.copytree(store, old)
    (old / MEMORY_FILE).unlink()
    count, frame = read_memory_events(old, EventFilter(min_bytes=1), 0, 10)
    assert count == 0 and frame.empty


def test_it_rebuilds_allocated_from_bytes_when_the_trace_has_no_totals(tmp_path):
    """PyTorch 1.9 wrote [memory] events with Bytes only: allocated is their running sum."""
    trace = write_without_totals(tmp_path / "bytes-only.json.gz")
    result = ingest_trace(trace, "kineto", tmp_path / "store")
    raw = running_sum(trace)
    points = raw.sums[(0, -1)]  # the CPU allocator's, the trace's only device
    [peak] = result.memory.peaks.to_dict("records")
    assert (peak["time_ns"], peak["allocated"]) == raw.peaks[(0, -1)]
    assert peak["allocated"] == 1_723_440
    assert peak["reserved"] == NOT_RECORDED
    assert peak["running"] == memory_expected().running
    curve = result.memory.curve  # 425 events: every one a point
    assert list(zip(curve["time_ns"], curve["allocated"], strict=True)) == points
    assert set(curve["reserved"]) == {NOT_RECORDED}
    table = pq.read_table(tmp_path / "store" / MEMORY_FILE)
    assert table.column("total_allocated").to_pylist() == [total for _, total in points]


def test_it_sums_bytes_per_device_and_keeps_recorded_totals():
    device = np.array([1, 0, 1, 0, 1])
    nbytes = np.array([100, 7, 50, -7, -120])
    totals = np.full(5, NOT_RECORDED)
    assert rebuilt_allocated(device, nbytes, totals).tolist() == [100, 7, 150, 0, 30]
    recorded = np.array([900, 7, 950, 0, 830])
    assert rebuilt_allocated(device, nbytes, recorded).tolist() == recorded.tolist()


def test_memory_events_on_a_thread_without_operators_belong_to_none(tmp_path):
    """Allocations with no operator around them (a thread that ran none) are listed as outside
    every operator, not a failed parse."""
    memory = {"Device Type": 0, "Device Id": -1, "Addr": 1, "Total Reserved": 4096}
    events = [
        {"ph": "C", "name": "counter", "pid": 1, "tid": 1, "ts": 1, "args": {"v": 1}},
        {
            "ph": "i",
            "cat": "cpu_instant_event",
            "name": "[memory]",
            "pid": 1,
            "tid": 1,
            "ts": 2,
            "s": "t",
            "args": {**memory, "Bytes": 100, "Total Allocated": 100},
        },
        {
            "ph": "i",
            "cat": "cpu_instant_event",
            "name": "[memory]",
            "pid": 1,
            "tid": 1,
            "ts": 3,
            "s": "t",
            "args": {**memory, "Bytes": -40, "Total Allocated": 60},
        },
    ]
    trace = tmp_path / "no-operators.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    result = ingest_trace(trace, "kineto", tmp_path / "store")
    [peak] = result.memory.peaks.to_dict("records")
    assert (peak["allocated"], peak["running"]) == (100, [])
    [row] = result.memory.operators.to_dict("records")
    assert (row["name"], row["allocations"], row["allocated_bytes"]) == (NO_OPERATOR, 1, 100)
