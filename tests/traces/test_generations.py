"""Small traces in each generation's shape of the Kineto format (where no real file is at hand),
and traces the reader does not know, which must say so rather than pass for a clean profile."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from profiler_app.traces import TimelineReader, ingest_trace
from profiler_app.traces.part_sink import FLOWS_FILE
from tracefmt.kinds import EventKind


def ingest(tmp_path: Path, doc, name: str = "trace.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return ingest_trace(path, "kineto", tmp_path / "store")


def complete(cat: str, name: str, pid: int, tid: object, ts: float, dur: float, **fields) -> dict:
    """A complete ("X") event."""
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        **fields,
    }


def launch_and_kernel(categories: tuple[str, str], flow: str, tid: object = 7) -> list[dict]:
    """A runtime call on the host launching one kernel, linked by correlation 41 and a flow."""
    runtime, kernel = categories
    return [
        complete(
            runtime, "cudaLaunchKernel", 10, 11, 100, 5, args={"correlation": 41, "external id": 3}
        ),
        complete(
            kernel,
            "void gemm_kernel<float>()",
            0,
            tid,
            110,
            20,
            args={"correlation": 41, "device": 0, "stream": 7},
        ),
        {"ph": "s", "cat": flow, "name": "launch", "id": 41, "pid": 10, "tid": 11, "ts": 100},
        {
            "ph": "f",
            "cat": flow,
            "name": "launch",
            "id": 41,
            "pid": 0,
            "tid": tid,
            "ts": 110,
            "bp": "e",
        },
    ]


def stored(tmp_path: Path, columns: list[str]) -> list[tuple]:
    reader = TimelineReader(tmp_path / "store")
    table = reader.read_all(["name", *columns]).to_pydict()
    names = [reader.strings[i] for i in table.pop("name")]
    return sorted(zip(names, *(table[c] for c in columns), strict=True))


@pytest.mark.parametrize(
    ("categories", "flow", "tid"),
    [
        (("Runtime", "Kernel"), "async", "stream 7"),  # PyTorch 1.8–1.9
        (("cuda_runtime", "kernel"), "async_gpu", 7),  # the intermediate flow name
        (("cuda_runtime", "kernel"), "ac2g", 7),  # PyTorch 1.10 and later
        (("mtia_runtime", "mtia_ccp_events"), "ac2g", 7),  # Meta MTIA
        (("privateuse1_runtime", "kernel"), "ac2g", 7),  # out-of-tree accelerators
    ],
)
def test_it_links_launches_and_device_work_in_every_generation(tmp_path, categories, flow, tid):
    result = ingest(tmp_path, {"traceEvents": launch_and_kernel(categories, flow, tid)})
    assert result.aggregates.event_counts == {"cuda_runtime": 1, "kernel": 1}
    assert stored(tmp_path, ["kind", "correlation", "device", "stream", "external_id"]) == [
        ("cudaLaunchKernel", EventKind.CUDA_RUNTIME, 41, -1, -1, 3),
        ("void gemm_kernel<float>()", EventKind.KERNEL, 41, 0, 7, -1),
    ]
    # The launch flow repeats the correlation: it is not kept as a flow of its own.
    assert pq.read_metadata(tmp_path / "store" / FLOWS_FILE).num_rows == 0
    assert "flow" not in result.aggregates.event_counts
    assert result.metadata["read_warning"] == ""


def test_it_reads_the_old_operator_data_loader_and_python_names(tmp_path):
    stream = {"device": 0, "stream": 7}
    events = [
        complete("Operator", "ProfilerStep#3", 1, 1, 0, 100),
        complete("DataLoader", "enumerate(DataLoader)#_MultiProcessing", 1, 1, 1, 10),
        complete("Operator", "aten::conv2d", 1, 1, 20, 30, args={"External id": 5}),
        complete("Python", "train.py(12): step", 1, 1, 12, 70),
        complete(
            "Memcpy",
            "Memcpy HtoD (Pageable -> Device)",
            0,
            "stream 7",
            60,
            4,
            args={**stream, "correlation": 9, "bytes": 4096},
        ),
        complete(
            "Memset",
            "Memset (Device)",
            0,
            "stream 7",
            70,
            1,
            args={**stream, "correlation": 10, "bytes": 64},
        ),
    ]
    result = ingest(tmp_path, {"schemaVersion": 1, "traceEvents": events})
    agg = result.aggregates
    assert agg.event_counts == {
        "cpu_op": 2,
        "user_annotation": 1,
        "python_function": 1,
        "gpu_memcpy": 1,
        "gpu_memset": 1,
    }
    assert agg.steps[["step", "dur_ns"]].values.tolist() == [[3, 100_000]]
    ops = dict(zip(agg.memory_ops["operation"], agg.memory_ops["bytes"], strict=True))
    assert ops == {"Memcpy HtoD": 4096, "Memset": 64}


def test_it_reads_a_bare_event_array_and_nanosecond_display(tmp_path):
    kernel = launch_and_kernel(("cuda_runtime", "kernel"), "ac2g")
    result = ingest(tmp_path, kernel)
    assert result.aggregates.event_counts == {"cuda_runtime": 1, "kernel": 1}

    doc = {
        "schemaVersion": 1,
        "displayTimeUnit": "ns",
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}, {"id": 1, "name": "NVIDIA H100"}],
        "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
        "traceName": "rank3.pt.trace.json",
        "traceEvents": [{**e, "ts": e["ts"] + 0.125} for e in kernel],
    }
    result = ingest(tmp_path, doc, "ns.json")
    assert result.metadata["distributed_info"]["rank"] == 3
    assert result.metadata["trace_name"] == "rank3.pt.trace.json"
    assert result.metadata["gpu_count"] == 2
    [(_, start, dur)] = [r for r in stored(tmp_path, ["start_ns", "dur_ns"]) if "gemm" in r[0]]
    assert (start, dur) == (1_700_000_000_000_000_000 + 110_125, 20_000)


def test_it_keeps_memory_events_as_instants(tmp_path):
    memory = {
        "ph": "i",
        "s": "t",
        "cat": "cpu_instant_event",
        "name": "[memory]",
        "pid": 1,
        "tid": 1,
        "ts": 5,
        "args": {
            "Device Type": 1,
            "Device Id": 0,
            "Addr": 1234,
            "Bytes": 512,
            "Total Allocated": 512,
            "Total Reserved": 2048,
        },
    }
    op = {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 4, "dur": 3}
    result = ingest(tmp_path, {"traceEvents": [op, memory]})
    assert result.aggregates.event_counts == {"cpu_op": 1, "instant": 1}
    assert result.metadata["read_warning"] == ""


def test_a_chrome_trace_of_another_tool_is_not_a_clean_profile(tmp_path):
    events = [
        {"ph": "B", "cat": "blink", "name": "Layout", "pid": 1, "tid": 1, "ts": 0},
        {"ph": "E", "cat": "blink", "name": "Layout", "pid": 1, "tid": 1, "ts": 9},
        *[
            {"ph": "X", "cat": "v8", "name": f"Compile {i}", "pid": 1, "tid": 1, "ts": i, "dur": 1}
            for i in range(10)
        ],
    ]
    result = ingest(tmp_path, {"traceEvents": events})
    warning = result.metadata["read_warning"]
    assert "12 of 12 events (100.0 %) were not recognised" in warning
    assert "category 'v8' (10)" in warning
    assert "phase 'B' (1)" in warning and "phase 'E' (1)" in warning
    assert result.metadata["unknown_categories"] == {"v8": 10}


def test_device_work_of_an_unknown_kind_is_named(tmp_path):
    events = launch_and_kernel(("cuda_runtime", "gpu_kernel_v9"), "ac2g", "stream 7")
    result = ingest(tmp_path, {"traceEvents": events})
    warning = result.metadata["read_warning"]
    assert warning.startswith("1 events look like GPU work")
    assert "category 'gpu_kernel_v9' (1)" in warning
    assert "not a profile without GPU work" in warning


def test_a_few_unknown_events_do_not_warn(tmp_path):
    ops = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": i, "dur": 1}
        for i in range(200)
    ]
    odd = {"ph": "X", "cat": "my_marker", "name": "checkpoint", "pid": 1, "tid": 1, "ts": 0}
    result = ingest(tmp_path, {"traceEvents": [*ops, odd]})
    assert result.metadata["unknown_categories"] == {"my_marker": 1}
    assert result.metadata["read_warning"] == ""
