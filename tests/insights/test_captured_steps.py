"""A collector job's trace figures cover the steps Kineto recorded, not every annotated step.

The job is built the way the collector builds it (``collector.chunker.ChunkBuilder``): 160 steps
annotated by the collector, Kineto recording 4 of every 50 (steps 3–6, 53–56, 103–106, 153–156),
each captured step 10 ms long with an 1.8 ms copy from pageable memory (18 %) and a 4.6 ms
kernel, so the GPU is busy 64 % of it. The expected figures are computed here from those
numbers, not by the product's code.
"""

from __future__ import annotations

import gzip
import json

import pytest

from collector.chunker import ChunkBuilder
from collector.identity import Identity
from profiler_app.analysis import RankTrace, analyze
from profiler_app.insights.pure.rules import params_from_overrides
from profiler_app.insights.pure.rules.recommendations import recommend
from profiler_app.traces import TimelineReader, ingest_trace
from tracefmt.chunk import KinetoWindow
from tracefmt.kinds import EventKind

T0 = 1_700_000_000_000_000_000
STEP_NS = 10_000_000
N_STEPS = 160
CAPTURED = [s for first in (3, 53, 103, 153) for s in range(first, first + 4)]
COPY_US, KERNEL_US = 1_800, 4_600
PID = 10


def step_start(step: int) -> int:
    return T0 + step * STEP_NS


def kineto_window(steps: list[int]) -> KinetoWindow:
    """What torch.profiler writes for one window: its steps, a copy and a kernel in each."""
    events, correlation = [], 0

    def host(cat: str, name: str, ts: float, dur: float, **args) -> None:
        events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": PID,
                "tid": PID,
                "ts": ts,
                "dur": dur,
                "args": args,
            }
        )

    def gpu(cat: str, name: str, ts: float, dur: float, **args) -> None:
        events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": 0,
                "tid": 7,
                "ts": ts,
                "dur": dur,
                "args": {"device": 0, "stream": 7, **args},
            }
        )

    for step in steps:
        at = (step_start(step) - T0) / 1000  # µs after baseTimeNanoseconds
        host("user_annotation", f"ProfilerStep#{step}", at + 5, STEP_NS / 1000 - 10)
        correlation += 1
        host("cpu_op", "aten::copy_", at + 90, 40)
        host("cuda_runtime", "cudaMemcpyAsync", at + 100, 20, correlation=correlation)
        gpu(
            "gpu_memcpy",
            "Memcpy HtoD (Pageable -> Device)",
            at + 150,
            COPY_US,
            correlation=correlation,
            bytes=64 << 20,
        )
        correlation += 1
        host("cpu_op", "aten::conv2d", at + 1_990, 30)
        host("cuda_runtime", "cudaLaunchKernel", at + 2_000, 10, correlation=correlation)
        gpu("kernel", "void conv_kernel<float>()", at + 2_000, KERNEL_US, correlation=correlation)
    trace = {"traceEvents": events, "baseTimeNanoseconds": T0}
    return KinetoWindow(gzip.compress(json.dumps(trace).encode()))


@pytest.fixture(scope="module")
def collector_job(tmp_path_factory):
    folder = tmp_path_factory.mktemp("captured")
    identity = Identity(
        node="algo-1", hostname="host-1", rank=0, local_rank=0, world_size=1, node_count=1, pid=PID
    )
    builder = ChunkBuilder(
        "resnet",
        identity,
        "2.13.0",
        True,
        [{"index": 0, "name": "H200", "total_memory_bytes": 141 << 30}],
    )
    steps = [
        (int(EventKind.STEP), f"step_{s}", step_start(s), STEP_NS, PID) for s in range(N_STEPS)
    ]
    windows = [kineto_window(CAPTURED[i : i + 4]) for i in range(0, len(CAPTURED), 4)]
    chunk = builder.build(steps, windows, [], {"kineto": "ok"}, True)
    path = folder / chunk.name
    path.write_bytes(chunk.data)
    ingest_trace(path, "collector", folder / "store")
    return folder / "store"


def judge(store) -> dict:
    params = params_from_overrides(None)
    analyses = analyze([RankTrace.from_store(0, store, part_id=1)], params, window="whole_trace")
    return analyses, {r.rule: r for r in recommend(analyses, params)}


def test_it_marks_the_steps_kineto_recorded(collector_job):
    model = TimelineReader(collector_job).read_all(["is_step", "captured", "step"]).to_pandas()
    steps = model[model["is_step"]]
    assert len(steps) == N_STEPS
    assert sorted(steps.loc[steps["captured"], "step"]) == CAPTURED


def test_it_takes_copy_shares_over_the_captured_steps(collector_job):
    _, found = judge(collector_job)
    copies = found["HostToDeviceCopies"]
    rank = copies.evidence["ranks"]["0"]
    assert copies.triggered
    # 16 copies of 1.8 ms over 16 steps of 10 ms: 18 % (over all 160 steps it would be 1.8 %).
    assert rank["steps"] == len(CAPTURED)
    assert rank["pageable_copies"] == len(CAPTURED)
    assert rank["pageable_pct_of_steps"] == pytest.approx(100 * COPY_US * 1000 / STEP_NS)
    assert rank["window"] == "captured steps 3–6, 53–56, 103–106, 153–156 (16 of 160)"


def test_it_takes_gpu_idle_over_the_captured_steps(collector_job):
    analyses, found = judge(collector_job)
    # Per window: from the first copy's start (150 µs into its first step) to the last
    # kernel's end (2,000 + 4,600 µs into its fourth step); busy 4 x (1.8 + 4.6) ms.
    span = 4 * (3 * STEP_NS + (2_000 + KERNEL_US - 150) * 1000)
    busy = 4 * 4 * (COPY_US + KERNEL_US) * 1000
    temporal = analyses.temporal.set_index("rank")
    assert temporal.at[0, "span_ns"] == span
    assert temporal.at[0, "idle_pct"] == pytest.approx(100 * (span - busy) / span)
    launch = found["LaunchOverhead"].evidence["ranks"]["0"]
    assert launch["gpu_idle_pct"] == pytest.approx(100 * (span - busy) / span)


def test_it_leaves_no_negative_self_time(collector_job):
    model = TimelineReader(collector_job).read_all(["self_ns", "kind", "dur_ns"]).to_pandas()
    assert (model["self_ns"] >= 0).all()
    assert (model["self_ns"] <= model["dur_ns"]).all()
