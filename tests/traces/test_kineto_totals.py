"""Exact totals for every shared trace, against numbers computed from its raw JSON."""

import gzip
import json

import pytest

from tests.traces.expected import DATA, TRACES, expected
from tracefmt.kinds import KIND_NAMES

CATEGORY_KIND = {
    "cpu_op": "cpu_op",
    "user_annotation": "user_annotation",
    "gpu_user_annotation": "gpu_user_annotation",
    "cuda_runtime": "cuda_runtime",
    "cuda_driver": "cuda_driver",
    "kernel": "kernel",
    "gpu_memcpy": "gpu_memcpy",
    "gpu_memset": "gpu_memset",
    "Trace": "other",
    "overhead": "other",
}


@pytest.mark.parametrize("trace", TRACES)
def test_it_counts_events_per_category(trace, ingested):
    want = expected(trace)
    counts = dict(ingested(trace).aggregates.event_counts)
    by_kind: dict[str, int] = {}
    for category, n in want.x_count_by_category.items():
        kind = CATEGORY_KIND[category]
        by_kind[kind] = by_kind.get(kind, 0) + n
    if want.instant_count:
        by_kind["instant"] = want.instant_count
    assert {k: v for k, v in counts.items() if k in KIND_NAMES.values()} == by_kind


@pytest.mark.parametrize("trace", TRACES)
def test_it_totals_kernel_time_and_count_per_name(trace, ingested):
    want = expected(trace)
    kernels = ingested(trace).aggregates.kernels
    per_name = kernels.groupby("name").agg(
        count=("count", "sum"),
        total_ns=("total_ns", "sum"),
        min_ns=("min_ns", "min"),
        max_ns=("max_ns", "max"),
    )
    assert dict(per_name["count"]) == dict(want.kernel_count)
    assert dict(per_name["total_ns"]) == dict(want.kernel_total_ns)
    assert dict(per_name["min_ns"]) == want.kernel_min_ns
    assert dict(per_name["max_ns"]) == want.kernel_max_ns


@pytest.mark.parametrize("trace", TRACES)
def test_it_totals_memory_bytes_per_operation(trace, ingested):
    want = expected(trace)
    ops = ingested(trace).aggregates.memory_ops
    got = ops.groupby("operation")["bytes"].sum().to_dict()
    assert got == {k: v for k, v in want.memcpy_bytes.items()}


@pytest.mark.parametrize("trace", TRACES)
def test_it_finds_steps_with_exact_durations(trace, ingested):
    want = expected(trace)
    steps = ingested(trace).aggregates.steps
    got = list(zip(steps["step"], steps["start_ns"], steps["dur_ns"], strict=True))
    assert got == want.steps


@pytest.mark.parametrize("trace", TRACES)
def test_it_reports_the_time_span_on_the_unix_epoch(trace, ingested):
    want = expected(trace)
    result = ingested(trace)
    assert (result.aggregates.start_ns, result.aggregates.end_ns) == (want.start_ns, want.end_ns)
    assert result.metadata["base_time_ns"] == want.offset_ns


def test_it_converts_kineto_microseconds_exactly(ingested):
    # 1712195495519689.047 µs cannot be a float64; the parser reads the JSON text.
    events = ingested("gpu_training_rank0.pt.trace.json.gz").store
    from profiler_app.traces import TimelineReader

    starts = set(TimelineReader(events.directory).read_all(["start_ns"]).column(0).to_pylist())
    assert 1712195495519689047 in starts


def test_it_records_collective_metadata_of_nccl_kernels(ingested):
    from profiler_app.traces import TimelineReader

    with gzip.open(DATA / "nccl_rank0.json.gz") as f:
        raw = json.load(f)["traceEvents"]
    want = sorted(
        (
            e["args"]["Collective name"],
            e["args"]["dtype"],
            e["args"]["In msg nelems"],
            e["args"]["Group size"],
        )
        for e in raw
        if e.get("cat") == "kernel" and "Collective name" in e.get("args", {})
    )
    reader = TimelineReader(ingested("nccl_rank0.json.gz").store.directory)
    rows = reader.read_all(["kind", "collective", "dtype", "in_nelems", "group_size"]).to_pandas()
    kernels = rows[(rows["kind"] == 5) & (rows["collective"] >= 0)]
    s = reader.strings
    got = sorted(
        (s[c], s[d], n, g)
        for c, d, n, g in zip(
            kernels["collective"],
            kernels["dtype"],
            kernels["in_nelems"],
            kernels["group_size"],
            strict=True,
        )
    )
    assert len(want) == 21
    assert got == want


def test_it_classifies_kernels_like_hta(ingested):
    kernels = ingested("nccl_rank0.json.gz").aggregates.kernels
    category = dict(zip(kernels["name"], kernels["category"], strict=True))
    assert category["Memcpy DtoD (Device -> Device)"] == "MEM"
    assert category["Memset (Device)"] == "MEM"
    assert {c for n, c in category.items() if n.startswith("ncclKernel")} == {"COMM"}
    assert category[next(n for n in category if "cudnn" in n)] == "COMP"


def test_it_decodes_slices_in_worker_processes_with_the_same_results(tmp_path, ingested):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from profiler_app.traces import Limits, ingest_trace

    trace = "nccl_rank0.json.gz"
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        parallel = ingest_trace(
            DATA / trace,
            "kineto",
            tmp_path / "s",
            Limits(chunk_bytes=1 << 20),
            executor=pool,
            workers=2,
        )
    serial = ingested(trace)
    key = ["device", "name", "precision"]
    assert (
        parallel.aggregates.kernels.sort_values(key)
        .reset_index(drop=True)
        .equals(serial.aggregates.kernels.sort_values(key).reset_index(drop=True))
    )
    assert parallel.aggregates.event_counts == serial.aggregates.event_counts
    assert parallel.store.n_events == serial.store.n_events
