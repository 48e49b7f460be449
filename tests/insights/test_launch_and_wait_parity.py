"""Launches, queue length and device-side waits against Holistic Trace Analysis 0.5, on a trace
built like the public traces where the app and HTA once parted: CUDA graphs (one
``cudaGraphLaunch``, three kernels under its correlation id), the driver API (``cuLaunchKernel``),
``cudaMemsetAsync``, and a stream waiting on an event ("Stream Wait Event", an "Event Sync").

HTA counts as launches only the calls of its own list; its queue length counts a wider list; it
lists every event on a device stream as a GPU kernel, typed by its name. The expected figures are
computed here from the raw events, then HTA is run beside the app on the same file.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from profiler_app.analysis import RankTrace, analyze
from profiler_app.traces import ingest_trace
from tests.conftest import DATA_DIR
from tests.insights.hta_reference import reference
from tests.traces.synthetic import complete_event

pytestmark = pytest.mark.slow

x = complete_event
STEPS = 4
STEP_US = 2000
STREAM, COPY_STREAM = 7, 20
HTA_LAUNCH_CALLS = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync"}
HTA_QUEUE_CALLS = HTA_LAUNCH_CALLS | {"cuLaunchKernel"}
DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_sync"}

# Per step: (host category, call, [(device category, op name, stream, µs), ...]).
STEP_WORK = [
    ("cuda_runtime", "cudaLaunchKernel", [("kernel", "void gemm_kernel<float>", STREAM, 40)]),
    ("cuda_runtime", "cudaLaunchKernelExC", [("kernel", "void attention_kernel", STREAM, 30)]),
    ("cuda_driver", "cuLaunchKernel", [("kernel", "cudnn_conv_kernel", STREAM, 25)]),
    (
        "cuda_runtime",
        "cudaGraphLaunch",
        [("kernel", f"void graph_kernel_{k}", STREAM, 5 + k) for k in range(3)],
    ),
    ("cuda_runtime", "cudaMemsetAsync", [("gpu_memset", "Memset (Device)", STREAM, 3)]),
    (
        "cuda_runtime",
        "cudaMemcpyAsync",
        [("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", COPY_STREAM, 50)],
    ),
    ("cuda_runtime", "cudaStreamWaitEvent", [("cuda_sync", "Stream Wait Event", STREAM, 2)]),
    ("cuda_runtime", "cudaLaunchKernel", [("kernel", "void relu_kernel", STREAM, 6)]),
    ("cuda_runtime", "cudaEventSynchronize", [("cuda_sync", "Event Sync", STREAM, 4)]),
]


def synthetic_trace() -> list[dict]:
    """``STEPS`` profiler steps of ``STEP_WORK``: each call 10 µs apart on the host, each op
    60 µs apart on the device, linked by correlation id."""
    events: list[dict] = []
    correlation = 1
    for step in range(STEPS):
        t0 = step * STEP_US
        events.append(x("user_annotation", f"ProfilerStep#{step}", t0, STEP_US - 10))
        device_t = t0 + 300
        for k, (category, call, ops) in enumerate(STEP_WORK):
            events.append(x(category, call, t0 + 20 + 10 * k, 8, tid=1, correlation=correlation))
            for cat, name, stream, dur in ops:
                args = {"device": 0, "stream": stream, "correlation": correlation}
                events.append(x(cat, name, device_t, dur, pid=0, tid=stream, **args))
                device_t += 60
            correlation += 1
    return events


def write(path: Path, events: list[dict]) -> Path:
    document = {"distributedInfo": {"rank": 0}, "traceEvents": events}
    with gzip.open(path, "wt") as fh:
        json.dump(document, fh)
    return path


def ours_and_hta(work: Path, events: list[dict]) -> tuple:
    """``events`` as rank 0's trace in ``work``: our analyses of it, and HTA's."""
    path = write(work / "rank-0.pt.trace.json.gz", events)
    ingest_trace(path, "kineto", work / "store")
    return analyze([RankTrace.from_store(0, work / "store")]), reference([path], work)


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    ours, hta = ours_and_hta(tmp_path_factory.mktemp("launch-parity"), synthetic_trace())
    return ours, hta, synthetic_trace()


def in_complete_steps(events: list[dict]) -> list[dict]:
    """The host calls and device ops of every step but the last (the window HTA reads)."""
    last = (STEPS - 1) * STEP_US
    return [e for e in events if e["ts"] < last or e.get("pid") == 0 and e["ts"] < last + 300]


def raw_pairs(events: list[dict], calls: set[str] | None) -> list[tuple[dict, dict]]:
    """(call, op) of each call named in ``calls`` (every call: None) and the first device op
    of its correlation id."""
    ops: dict[int, dict] = {}
    for e in events:
        if e["cat"] in DEVICE_CATEGORIES:
            ops.setdefault(e["args"]["correlation"], e)
    return [
        (e, ops[e["args"]["correlation"]])
        for e in events
        if e["cat"] in ("cuda_runtime", "cuda_driver")
        and (calls is None or e["name"] in calls)
        and e["args"]["correlation"] in ops
    ]


def test_it_counts_launches_as_hta_and_the_wider_count_beside(compared):
    ours, hta, events = compared
    window = in_complete_steps(events)
    launches = raw_pairs(window, HTA_LAUNCH_CALLS)
    assert len(launches) == (STEPS - 1) * 5
    assert len(hta["launches"]["0"]) == len(launches)
    [findings] = ours.launch_findings.to_dict("records")
    assert findings["launches"] == len(launches)
    # Every call that enqueued GPU work: the graph launch once, the driver call, the waits' calls.
    assert findings["all_launches"] == len(raw_pairs(window, None)) == (STEPS - 1) * len(STEP_WORK)
    table = ours.launches[ours.launches["hta"]].set_index("correlation")
    theirs = {r["correlation"]: r for r in hta["launches"]["0"]}
    assert sorted(table.index) == sorted(theirs)
    for correlation, row in table.iterrows():
        assert row["cpu_dur_ns"] == theirs[correlation]["cpu_duration"]
        assert row["gpu_dur_ns"] == theirs[correlation]["gpu_duration"]
        assert row["launch_delay_ns"] == theirs[correlation]["launch_delay"]
    delays = [op["ts"] - call["ts"] - call["dur"] for call, op in launches]
    stats = ours.launch_stats.set_index("measure")
    assert stats.loc["launch_delay_ns", "count"] == len(delays)
    assert stats.loc["launch_delay_ns", "mean"] == pytest.approx(1000 * np.mean(delays))


def test_the_queue_length_counts_htas_enqueue_calls(compared):
    ours, hta, events = compared
    pairs = raw_pairs(in_complete_steps(events), HTA_QUEUE_CALLS)
    per_stream: dict[int, int] = {}
    for _, op in pairs:
        per_stream[op["args"]["stream"]] = per_stream.get(op["args"]["stream"], 0) + 2
    mine = ours.queue_length_summary.set_index("stream")
    assert {int(s): int(mine.loc[s, "count"]) for s in mine.index} == per_stream
    theirs = {r["stream"]: r for r in hta["queue_length"]}
    assert theirs.keys() == per_stream.keys()
    for stream, row in theirs.items():
        for column, key in (("count", "count"), ("mean", "mean"), ("max", "max"), ("p50", "50%")):
            assert mine.loc[stream, column] == pytest.approx(row[key]), (stream, column)


def test_waits_on_a_stream_are_kernels_typed_as_hta_types_them(compared):
    ours, hta, events = compared
    window = [e for e in in_complete_steps(events) if e["cat"] == "cuda_sync"]
    kernels = ours.kernels.set_index("name")
    for name, kind in (("Stream Wait Event", "COMP"), ("Event Sync", "OTHER")):
        runs = [e["dur"] * 1000 for e in window if e["name"] == name]
        assert (kernels.loc[name, "type"], kernels.loc[name, "count"]) == (kind, len(runs))
        assert kernels.loc[name, "sum_ns"] == sum(runs)
    # HTA's kernel table (COMP, COMM, MEM) holds the stream wait, as COMPUTATION, not the sync.
    theirs = {r["name"]: r for r in hta["kernels"]}
    assert theirs["Stream Wait Event"]["kernel_type"] == "COMPUTATION"
    assert theirs["Stream Wait Event"]["sum (us)"] == kernels.loc["Stream Wait Event", "sum_ns"]
    assert "Event Sync" not in theirs
    listed = set(ours.kernels[ours.kernels["type"] != "OTHER"]["name"])
    assert listed == set(theirs)
    # Compute time counts the wait, as HTA's temporal breakdown does.
    [temporal] = ours.temporal.to_dict("records")
    [their_temporal] = hta["temporal"]
    assert temporal["compute_ns"] == their_temporal["compute_time(us)"]
    assert temporal["idle_ns"] == their_temporal["idle_time(us)"]
    # HTA's idle breakdown reads kernels, copies and sets only: on the stream, the time of the
    # waits is idle time there.
    idle = ours.idle.set_index(["stream", "category"])["idle_ns"]
    for row in hta["idle"]:
        assert idle.get((row["stream"], row["idle_category"]), 0) == row["idle_time"], row
    stream_ops = [
        e
        for e in in_complete_steps(events)
        if e["cat"] in DEVICE_CATEGORIES - {"cuda_sync"} and e["args"]["stream"] == STREAM
    ]
    stream_ops.sort(key=lambda e: e["ts"])
    gaps = [b["ts"] - a["ts"] - a["dur"] for a, b in itertools.pairwise(stream_ops)]
    assert idle.xs(STREAM, level="stream").sum() == 1000 * sum(gaps)


ROCM_TRACE = DATA_DIR / "amd_mi250_small.json.gz"


@pytest.fixture(scope="module")
def rocm(tmp_path_factory):
    work = tmp_path_factory.mktemp("rocm")
    ingest_trace(ROCM_TRACE, "kineto", work / "store")
    ours = analyze([RankTrace.from_store(0, work / "store")])
    with gzip.open(ROCM_TRACE, "rt") as fh:
        events = json.load(fh, parse_float=Decimal)["traceEvents"]
    return ours, reference([ROCM_TRACE], work), reference([ROCM_TRACE], work, exact=False), events


def test_rocm_kernels_and_launches_are_htas(rocm):
    """The MI250 trace: every ``kernel`` event is a computation kernel to HTA and to us; HTA
    counts no ROCm call as a launch (``hipLaunchKernel`` is not in its launch statistics), so
    neither do we, and the 16 calls that enqueued GPU work are the wider count."""
    ours, hta, _, events = rocm
    kernels = [e for e in events if e.get("cat") == "kernel"]
    compute_ns = sum(int(Decimal(e["dur"]) * 1000) for e in kernels)
    assert (len(kernels), compute_ns) == (14, 110_881)
    types = ours.kernel_types.set_index("kernel_type")["time_ns"]
    assert types["COMP"] == compute_ns
    assert {r["kernel_type"]: r["sum"] for r in hta["kernel_types"]}["COMPUTATION"] == compute_ns
    [findings] = ours.launch_findings.to_dict("records")
    enqueued = {e["args"]["correlation"] for e in events if e.get("cat") in DEVICE_CATEGORIES}
    calls = [
        e
        for e in events
        if e.get("cat") == "cuda_runtime" and e["args"].get("correlation") in enqueued
    ]
    assert hta["launches"]["0"] == []
    assert (findings["launches"], findings["all_launches"]) == (0, len(calls)) == (0, 16)
    # HTA's queue length counts the hip calls (its other list): two samples per call.
    [queue] = hta["queue_length"]
    assert ours.queue_length_summary["count"].tolist() == [queue["count"]] == [2 * len(calls)]


def test_rocms_96_us_of_compute_are_htas_whole_microseconds(rocm):
    """HTA run on the file as it is gives 96 µs of computation, not the trace's 110.881 µs: it
    rounds each event to whole microseconds inside it (start rounded up, end rounded down,
    ``hta.common.trace_parser.round_down_time_stamps``). The trace's own fields give ours."""
    _, _, as_is, events = rocm
    rounded = sum(
        math.floor(e["ts"] + e["dur"]) - math.ceil(e["ts"])
        for e in events
        if e.get("cat") == "kernel"
    )
    their_compute = {r["kernel_type"]: r["sum"] for r in as_is["kernel_types"]}["COMPUTATION"]
    assert their_compute == rounded == 96


# MTIA writes every device op as ``mtia_ccp_events`` and launches kernels with HTA's
# ``runFunction - job_prep_and_submit_for_execution``: (call, [(op, µs), ...]) per step.
MTIA_LAUNCH = "runFunction - job_prep_and_submit_for_execution"
MTIA_WORK = [
    (MTIA_LAUNCH, [("fc_fwd_kernel", 100)]),
    ("mtiaMemcpyAsync", [("dma_h2d", 50)]),
    ("waitEvent", [("event_wait", 200)]),
    (MTIA_LAUNCH, [("relu_kernel", 30)]),
]


def mtia_trace() -> list[dict]:
    events: list[dict] = []
    correlation = 1
    for step in range(STEPS):
        t0 = step * STEP_US
        events.append(x("user_annotation", f"ProfilerStep#{step}", t0, STEP_US - 10))
        device_t = t0 + 300
        for k, (call, ops) in enumerate(MTIA_WORK):
            events.append(x("mtia_runtime", call, t0 + 20 + 10 * k, 8, correlation=correlation))
            for name, dur in ops:
                args = {"device": 0, "stream": STREAM, "correlation": correlation}
                events.append(x("mtia_ccp_events", name, device_t, dur, pid=0, tid=STREAM, **args))
                device_t += dur + 20
            correlation += 1
    return events


@pytest.fixture(scope="module")
def mtia(tmp_path_factory):
    return ours_and_hta(tmp_path_factory.mktemp("mtia"), mtia_trace())


def test_mtia_device_ops_are_typed_and_timed_as_hta_does(mtia):
    """The DMA copy is memory, the kernels and the wait on an event computation (HTA lists
    every ``mtia_ccp_events`` op as a GPU kernel, typed by name); the idle time between them
    and the launches (MTIA's runFunction) are HTA's too. Expected figures from MTIA_WORK."""
    ours, hta = mtia
    steps = STEPS - 1  # the complete steps
    durations = {name: dur for _, ops in MTIA_WORK for name, dur in ops}
    kernels = ours.kernels.set_index("name")
    for name, dur in durations.items():
        expected_type = "MEM" if name.startswith("dma") else "COMP"
        assert kernels.loc[name, "type"] == expected_type, name
        assert kernels.loc[name, "sum_ns"] == steps * dur * 1000
    types = ours.kernel_types.set_index("kernel_type")["time_ns"]
    compute = steps * 1000 * sum(d for n, d in durations.items() if not n.startswith("dma"))
    assert types["COMP"] == compute
    theirs = {r["kernel_type"]: r["sum"] for r in hta["kernel_types"]}
    assert theirs == {"COMPUTATION": compute, "MEMORY": types["MEM"]}
    [temporal] = ours.temporal.to_dict("records")
    [their_temporal] = hta["temporal"]
    assert temporal["compute_ns"] == their_temporal["compute_time(us)"] == compute
    assert temporal["idle_ns"] == their_temporal["idle_time(us)"]
    idle = ours.idle.set_index(["stream", "category"])["idle_ns"]
    for row in hta["idle"]:
        assert idle.get((row["stream"], row["idle_category"]), 0) == row["idle_time"], row
    [findings] = ours.launch_findings.to_dict("records")
    launches = sum(1 for call, _ in MTIA_WORK if call == MTIA_LAUNCH)
    assert findings["launches"] == len(hta["launches"]["0"]) == steps * launches
    assert findings["all_launches"] == steps * len(MTIA_WORK)
