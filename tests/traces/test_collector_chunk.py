"""The collector's chunk format (docs/formats.md) ingests into the same aggregates and store."""

import json

import numpy as np
import pytest

from profiler_app.traces import TimelineReader, TraceFormatError, ingest_trace

T0 = 1_700_000_000_000_000_000
STRINGS = [
    "",
    "volta_sgemm_128x64_nn",
    "ncclKernel_AllReduce_RING_LL_Sum_float",
    "cudaLaunchKernel",
    "Memcpy HtoD (Pinned -> Device)",
    "step_1",
    "step_2",
    "Forward",
    "clk_unhalted_ref.tsc",
]
# kind, name, start (ns after T0), dur, pid, tid, device, stream, correlation, bytes, memcpy kind
EVENTS = [
    (5, 1, 1_000, 500, 10, 10, 0, 7, 1, -1, 0),
    (5, 1, 3_000, 700, 10, 10, 0, 7, 2, -1, 0),
    (5, 2, 5_000, 2_000, 10, 10, 0, 9, 3, -1, 0),
    (3, 3, 900, 50, 10, 10, -1, -1, 1, -1, 0),
    (6, 4, 8_000, 100, 10, 10, 0, 7, 4, 1024, 1),
    (10, 5, 0, 4_000, 10, 10, -1, -1, -1, -1, 0),
    (1, 6, 4_000, 6_000, 10, 10, -1, -1, -1, -1, 0),
    (1, 7, 500, 1_500, 10, 10, -1, -1, -1, -1, 0),
]
# kind, device, name, time (ns after T0), value
SAMPLES = [
    (0, 0, 0, 0, 10.0),
    (0, 0, 0, 1_000_000, 90.0),
    (3, 0, 0, 0, 55.0),
    (3, 1, 0, 0, 45.0),
    (6, -1, 8, 0, 12345.0),
]


def meta(**changes) -> dict:
    base = {
        "format": "profiler-app-chunk",
        "version": 1,
        "job": "j",
        "node": "algo-1",
        "hostname": "host-1",
        "rank": 0,
        "local_rank": 0,
        "world_size": 1,
        "pid": 10,
        "seq": 0,
        "final": True,
        "created_ns": T0,
        "torch_version": "2.13.0",
        "cuda": True,
        "devices": [{"index": 0, "name": "H100", "total_memory_bytes": 80 << 30}],
        "sources": {"kineto": "ok", "nvml": "ok", "psutil": "ok", "perf": "ok"},
    }
    return {**base, **changes}


def write_chunk(path, meta_obj=None, strings=STRINGS, events=EVENTS, samples=SAMPLES):
    ev = list(zip(*events, strict=True))
    sm = list(zip(*samples, strict=True))
    n = len(events)
    arrays: dict[str, np.ndarray] = {
        "meta": np.frombuffer(json.dumps(meta_obj or meta()).encode(), np.uint8),
        "strings": np.frombuffer(json.dumps(strings).encode(), np.uint8),
        "ev_kind": np.array(ev[0], np.uint8),
        "ev_name": np.array(ev[1], np.uint32),
        "ev_start_ns": T0 + np.array(ev[2], np.int64),
        "ev_dur_ns": np.array(ev[3], np.int64),
        "ev_pid": np.array(ev[4], np.int32),
        "ev_tid": np.array(ev[5], np.int64),
        "ev_device": np.array(ev[6], np.int16),
        "ev_stream": np.array(ev[7], np.int32),
        "ev_correlation": np.array(ev[8], np.int64),
        "ev_bytes": np.array(ev[9], np.int64),
        "ev_memcpy_kind": np.array(ev[10], np.uint8),
        "ev_grid": np.ones((n, 3), np.int32),
        "ev_block": np.full((n, 3), 128, np.int32),
        "ev_registers": np.full(n, 32, np.int32),
        "ev_shared_mem": np.zeros(n, np.int32),
        "s_kind": np.array(sm[0], np.uint8),
        "s_device": np.array(sm[1], np.int16),
        "s_name": np.array(sm[2], np.uint32),
        "s_time_ns": T0 + np.array(sm[3], np.int64),
        "s_value": np.array(sm[4], np.float64),
    }
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)  # type: ignore[arg-type]  # numpy stubs type **kwds as allow_pickle
    return path


@pytest.fixture
def result(tmp_path):
    return ingest_trace(write_chunk(tmp_path / "c.pcol"), "collector", tmp_path / "store")


def test_it_totals_kernels_from_a_chunk(result):
    k = result.aggregates.kernels.set_index("name")
    assert k.loc["volta_sgemm_128x64_nn", ["count", "total_ns", "min_ns", "max_ns"]].tolist() == [
        2,
        1200,
        500,
        700,
    ]
    assert k.loc["volta_sgemm_128x64_nn", "precision"] == "FP32"
    assert k.loc["ncclKernel_AllReduce_RING_LL_Sum_float", "category"] == "COMM"
    assert k.loc["Memcpy HtoD (Pinned -> Device)", "category"] == "MEM"


def test_it_keeps_memcpy_direction_and_bytes(result):
    ops = result.aggregates.memory_ops
    assert ops[["operation", "count", "total_ns", "bytes"]].values.tolist() == [
        ["Memcpy HtoD", 1, 100, 1024]
    ]


def test_it_reads_steps_from_step_events_and_step_annotations(result):
    steps = result.aggregates.steps
    assert steps[["step", "start_ns", "dur_ns"]].values.tolist() == [
        [1, T0, 4000],
        [2, T0 + 4000, 6000],
    ]
    assert result.aggregates.annotations[["name", "dur_ns"]].values.tolist() == [["Forward", 1500]]


def test_it_prefers_measured_gpu_utilisation_over_kernel_busy_time(result):
    series = result.aggregates.series
    gpu = series[series["metric"] == "gpu_util_pct"]
    assert set(gpu["source"]) == {"nvml"}
    assert gpu["value"].tolist() == [10.0, 90.0]
    cpu = series[series["metric"] == "cpu_util_pct"]
    assert sorted(zip(cpu["device"], cpu["value"], strict=True)) == [(0, 55.0), (1, 45.0)]
    counter = series[series["metric"] == "counter"]
    assert counter[["name", "value"]].values.tolist() == [["clk_unhalted_ref.tsc", 12345.0]]


def test_it_puts_kernels_on_stream_tracks(result):
    reader = TimelineReader(result.store.directory)
    assert {"GPU 0 stream 7", "GPU 0 stream 9"} <= set(reader.tracks["label"])
    assert reader.n_events == len(EVENTS)


def test_it_refuses_a_chunk_with_a_bad_meta(tmp_path):
    path = write_chunk(tmp_path / "c.pcol", meta_obj={**meta(), "version": 99})
    with pytest.raises(TraceFormatError, match="unsupported chunk version"):
        ingest_trace(path, "collector", tmp_path / "store")


def test_it_refuses_a_file_that_is_not_a_chunk(tmp_path):
    path = tmp_path / "c.pcol"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(TraceFormatError, match="not a profiler-app chunk"):
        ingest_trace(path, "collector", tmp_path / "store")


def captured(result) -> tuple[list[list[int]], dict[int, bool]]:
    """The part's captured windows (ns after T0) and whether each of its steps was captured."""
    windows = [[a - T0, b - T0] for a, b in result.metadata["captured_windows_ns"]]
    steps = result.aggregates.steps
    return windows, dict(zip(steps["step"], steps["captured"], strict=True))


def test_it_reads_a_converted_chunk_over_the_steps_a_kineto_call_starts_in(result):
    # cudaLaunchKernel starts 900 ns into step_1 ([0, 4000)); step_2 holds no call of Kineto's.
    assert captured(result) == ([[0, 4_000]], {1: True, 2: False})


def test_it_joins_adjacent_captured_steps_into_one_window(tmp_path):
    launch_in_step_2 = (3, 3, 4_100, 50, 10, 10, -1, -1, 5, -1, 0)
    path = write_chunk(tmp_path / "c.pcol", events=[*EVENTS, launch_in_step_2])
    result = ingest_trace(path, "collector", tmp_path / "store")
    assert captured(result) == ([[0, 10_000]], {1: True, 2: True})


def test_it_takes_the_span_of_kinetos_events_when_no_step_holds_one(tmp_path):
    # Kineto's rows (a launch and its kernel) after both steps end.
    events = [
        (10, 5, 0, 4_000, 10, 10, -1, -1, -1, -1, 0),
        (10, 6, 4_000, 6_000, 10, 10, -1, -1, -1, -1, 0),
        (3, 3, 12_000, 50, 10, 10, -1, -1, 1, -1, 0),
        (5, 1, 12_500, 700, 10, 10, 0, 7, 1, -1, 0),
    ]
    path = write_chunk(tmp_path / "c.pcol", events=events)
    result = ingest_trace(path, "collector", tmp_path / "store")
    assert captured(result) == ([[12_000, 13_200]], {1: False, 2: False})


def test_it_reads_a_converted_chunk_without_kinetos_events_as_not_captured(tmp_path):
    collector_only = [e for e in EVENTS if e[0] in (1, 10)]  # annotations and steps
    path = write_chunk(tmp_path / "c.pcol", events=collector_only)
    result = ingest_trace(path, "collector", tmp_path / "store")
    assert captured(result) == ([], {1: False, 2: False})
    model = TimelineReader(result.store.directory).read_all(["captured"]).to_pandas()
    assert len(model) == 3 and not model["captured"].any()
