"""Each trace recommendation fires on a small trace built to trigger it and stays quiet on one
built not to; its figures are the ones the trace was built with (times in µs, as Kineto)."""

import json

import pytest

from profiler_app.analysis import RankTrace, analyze
from profiler_app.insights.pure.by_rank import insights_by_rank
from profiler_app.insights.pure.rules import params_from_overrides
from profiler_app.insights.pure.rules.recommendations import recommend
from profiler_app.traces import ingest_trace

STEP_US = 100_000  # 100 ms steps; the last one is left out, as the analyses do
MS = 1_000_000  # ns


class Trace:
    """A Kineto trace of one rank: host thread (pid 1, tid 1) and GPU 0's streams."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.correlation = 0

    def steps(self, n: int, step_us: int = STEP_US) -> "Trace":
        for i in range(n + 1):
            self.host("user_annotation", f"ProfilerStep#{i}", i * step_us, step_us)
        return self

    def host(self, cat: str, name: str, ts: float, dur: float, tid: int = 1) -> None:
        self.events.append(
            {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}
        )

    def launch(
        self,
        cat: str,
        name: str,
        call_ts: float,
        call_dur: float,
        ts: float,
        dur: float,
        stream: int = 7,
        **args,
    ) -> None:
        """A runtime call on the host and the GPU work it enqueued."""
        self.correlation += 1
        call = "cudaMemcpyAsync" if cat == "gpu_memcpy" else "cudaLaunchKernel"
        self.events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": call,
                "pid": 1,
                "tid": 1,
                "ts": call_ts,
                "dur": call_dur,
                "args": {"correlation": self.correlation},
            }
        )
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": 0,
                "tid": stream,
                "ts": ts,
                "dur": dur,
                "args": {"correlation": self.correlation, "device": 0, "stream": stream, **args},
            }
        )

    def judge(self, tmp_path, rank: int = 0, overrides: dict | None = None) -> dict[str, dict]:
        return judge([(self, rank)], tmp_path, overrides)


def judge(traces: list[tuple[Trace, int]], tmp_path, overrides=None) -> dict[str, dict]:
    ranks = []
    for trace, rank in traces:
        path = tmp_path / f"rank{rank}.json"
        path.write_text(json.dumps({"traceEvents": trace.events}))
        ingest_trace(path, "kineto", tmp_path / f"store{rank}")
        ranks.append(RankTrace.from_store(rank, tmp_path / f"store{rank}", part_id=40 + rank))
    params = params_from_overrides(overrides)
    results = recommend(analyze(ranks, params), params)
    # The insights task judges a rank at a time: the same results.
    assert insights_by_rank(iter(ranks), params).found == tuple(results)
    return {r.rule: r for r in results}


def loader_trace(iterator: str, wait_us: int) -> Trace:
    """Three steps, each starting with a wait of ``wait_us`` for the next batch from a
    DataLoader ``iterator`` (and one more wait after the last)."""
    trace = Trace().steps(3)
    for i in range(4):
        trace.host(
            "cpu_op", f"enumerate(DataLoader)#{iterator}.__next__", i * STEP_US + 10, wait_us
        )
    return trace


def test_data_loading_fires_when_steps_wait_for_batches(tmp_path):
    found = loader_trace("_MultiProcessingDataLoaderIter", 30_000).judge(tmp_path)["DataLoading"]
    assert found.triggered
    rank = found.evidence["ranks"]["0"]
    assert (rank["steps"], rank["step_ns"], rank["data_loading_ns"]) == (3, 300 * MS, 90 * MS)
    assert rank["share_pct"] == pytest.approx(30.0)
    assert "num_workers" in found.recommendation
    # Each of the longest waits links to the timeline with the event selected.
    assert [(r.rank, r.end_ns - r.start_ns) for r in found.time_ranges] == [(0, 30 * MS)] * 3
    assert all(r.event.startswith("40:@") for r in found.time_ranges)


def test_data_loading_stays_quiet_when_batches_are_ready(tmp_path):
    found = loader_trace("_SingleProcessDataLoaderIter", 1_000).judge(tmp_path)["DataLoading"]
    assert not found.triggered and found.not_evaluated_reason is None
    assert found.evidence["ranks"]["0"]["share_pct"] == pytest.approx(1.0)


def sync_trace(wait_us: int) -> Trace:
    trace = Trace().steps(3)
    for i in range(4):
        start = i * STEP_US + 50_000
        trace.host("python_function", "train.py(42): train_step", start - 100, wait_us + 400)
        trace.host("cpu_op", "aten::item", start, wait_us + 200)
        trace.host("cpu_op", "aten::_local_scalar_dense", start + 50, wait_us + 100)
        trace.host("cuda_runtime", "cudaStreamSynchronize", start + 100, wait_us)
    return trace


def test_synchronization_fires_and_names_the_call_site(tmp_path):
    found = sync_trace(20_000).judge(tmp_path)["Synchronization"]
    assert found.triggered
    rank = found.evidence["ranks"]["0"]
    assert rank["waiting_ns"] == 3 * 20_200_000  # aten::item covers the nested waits once
    assert rank["share_pct"] == pytest.approx(20.2)
    assert rank["calls"]["cudaStreamSynchronize"] == {"count": 3, "total_ns": 60 * MS}
    site = found.evidence["call_sites"][0]
    assert site["call"] == "aten::item"
    assert site["stack"] == ["train.py(42): train_step"]
    assert ".item()" in found.recommendation


def test_synchronization_stays_quiet_for_rare_short_waits(tmp_path):
    found = sync_trace(100).judge(tmp_path)["Synchronization"]
    assert not found.triggered
    assert found.evidence["ranks"]["0"]["waiting_ns"] == 3 * 300_000


def launch_trace(kernel_us: float, call_us: float, gap_us: float, n: int = 150) -> Trace:
    trace = Trace().steps(1, step_us=int(n * (call_us + gap_us) + 1000))
    for i in range(n):
        call_ts = 10 + i * (call_us + gap_us)
        trace.launch(
            "kernel", "void add_kernel<float>()", call_ts, call_us, call_ts + call_us + 1, kernel_us
        )
    return trace


def test_launch_overhead_fires_when_tiny_kernels_leave_the_gpu_idle(tmp_path):
    found = launch_trace(kernel_us=2, call_us=10, gap_us=10).judge(tmp_path)["LaunchOverhead"]
    assert found.triggered
    rank = found.evidence["ranks"]["0"]
    assert (rank["launches"], rank["short_kernels"]) == (150, 150)
    assert rank["median_cpu_launch_ns"] == 10_000 and rank["median_gpu_ns"] == 2_000
    # GPU span: first kernel start to last kernel end; busy 150 x 2 µs.
    span = 149 * 20_000 + 2_000
    assert rank["gpu_idle_pct"] == pytest.approx(100 * (span - 150 * 2_000) / span)
    assert "CUDA graph" in found.recommendation
    # The step that ran them (the only complete one) is where to look.
    [(start, end)] = [(r.start_ns, r.end_ns) for r in found.time_ranges]
    assert (start, end - start) == (0, int(150 * 20 + 1000) * 1000)


def test_launch_overhead_stays_quiet_for_long_kernels(tmp_path):
    trace = launch_trace(kernel_us=500, call_us=5, gap_us=500)
    found = trace.judge(tmp_path)["LaunchOverhead"]
    assert not found.triggered
    assert found.evidence["ranks"]["0"]["short_kernels"] == 0


def test_launch_overhead_counts_short_kernels_by_the_jobs_runtime_cutoff(tmp_path):
    # 10 µs launch calls are runtime outliers under a 5 µs cut-off, so none is a short kernel,
    # as the launch findings count them.
    trace = launch_trace(kernel_us=2, call_us=10, gap_us=10)
    found = trace.judge(tmp_path, overrides={"KernelLaunchStatistics_runtime_cutoff": 5})
    launch = found["LaunchOverhead"]
    assert not launch.triggered
    assert (
        launch.evidence["ranks"]["0"]["launches"],
        launch.evidence["ranks"]["0"]["short_kernels"],
    ) == (150, 0)


def matmul_trace(gemm: str) -> Trace:
    trace = Trace().steps(3)
    for i in range(4):
        t = i * STEP_US + 100
        trace.launch("kernel", gemm, t, 5, t + 10, 80_000)
        trace.launch(
            "kernel",
            "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>()",
            t + 20,
            5,
            t + 80_020,
            20_000,
        )
    return trace


def test_tensor_cores_fires_for_fp32_matrix_multiplications(tmp_path):
    found = matmul_trace("volta_sgemm_128x64_nn").judge(tmp_path)["TensorCores"]
    assert found.triggered
    rank = found.evidence["ranks"]["0"]
    assert (rank["fp32_matmul_ns"], rank["compute_ns"]) == (240 * MS, 300 * MS)
    assert rank["share_pct"] == pytest.approx(80.0)
    assert "autocast" in found.recommendation and "allow_tf32" in found.recommendation


def test_tensor_cores_stays_quiet_for_bf16_and_tf32_tensor_op_kernels(tmp_path):
    for gemm in (
        "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_nn",
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>()",
    ):
        work = tmp_path / gemm[:20]
        work.mkdir()
        found = matmul_trace(gemm).judge(work)["TensorCores"]
        assert not found.triggered, gemm
        assert found.evidence["ranks"]["0"]["fp32_matmul_ns"] == 0


def copy_trace(name: str, nbytes: int, dur_us: int, per_step: int = 1) -> Trace:
    trace = Trace().steps(3)
    for i in range(4):
        for k in range(per_step):
            t = i * STEP_US + 100 + k * (dur_us + 20)
            trace.launch("gpu_memcpy", name, t, 5, t + 10, dur_us, bytes=nbytes)
    return trace


def test_host_to_device_copies_fire_for_pageable_memory(tmp_path):
    trace = copy_trace("Memcpy HtoD (Pageable -> Device)", 64 << 20, 10_000)
    found = trace.judge(tmp_path)["HostToDeviceCopies"]
    assert found.triggered
    rank = found.evidence["ranks"]["0"]
    assert (rank["pageable_copies"], rank["pageable_bytes"]) == (3, 3 * (64 << 20))
    assert rank["pageable_pct_of_steps"] == pytest.approx(10.0)
    assert "pin_memory" in found.recommendation


def test_host_to_device_copies_fire_for_many_small_copies(tmp_path):
    trace = copy_trace("Memcpy HtoD (Pinned -> Device)", 512, 2, per_step=60)
    found = trace.judge(tmp_path)["HostToDeviceCopies"]
    assert found.triggered
    assert found.evidence["ranks"]["0"]["small_copies_per_step"] == 60


def test_host_to_device_copies_stay_quiet_for_large_pinned_copies(tmp_path):
    trace = copy_trace("Memcpy HtoD (Pinned -> Device)", 64 << 20, 10_000)
    found = trace.judge(tmp_path)["HostToDeviceCopies"]
    assert not found.triggered and found.not_evaluated_reason is None
    assert found.evidence["ranks"]["0"]["pageable_copies"] == 0


NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"


def comm_trace(overlapped: bool, step_us: int = STEP_US) -> Trace:
    trace = Trace().steps(3, step_us=step_us)
    for i in range(4):
        t = i * step_us + 100
        trace.launch("kernel", "void conv_fwd_kernel<float>()", t, 5, t + 10, 40_000)
        comm_start = t + 10 if overlapped else t + 40_020
        trace.launch("kernel", NCCL, t + 6, 2, comm_start, 20_000, stream=13)
    return trace


def test_communication_fires_when_it_is_not_overlapped(tmp_path):
    found = comm_trace(overlapped=False).judge(tmp_path)["Communication"]
    assert found.triggered
    rank = found.evidence["ranks"]["0"]
    assert (rank["comm_ns"], rank["overlap_pct"]) == (60 * MS, 0.0)
    assert rank["comm_pct_of_steps"] == pytest.approx(20.0)
    assert found.evidence["exposed_ranks"] == ["0"]
    # The longest exposed collectives, each a link that selects it.
    assert [(r.end_ns - r.start_ns, r.event[:3]) for r in found.time_ranges] == [
        (20 * MS, "40:")
    ] * 3


def test_communication_stays_quiet_when_compute_hides_it(tmp_path):
    found = comm_trace(overlapped=True).judge(tmp_path)["Communication"]
    assert not found.triggered
    assert found.evidence["ranks"]["0"]["overlap_pct"] == pytest.approx(100.0)


def test_communication_names_the_slow_rank(tmp_path):
    ranks = [
        (comm_trace(overlapped=True), 0),
        (comm_trace(True), 1),
        (comm_trace(True, step_us=130_000), 2),
    ]
    found = judge(ranks, tmp_path)["Communication"]
    assert found.triggered
    [slow] = found.evidence["slow_ranks"]
    assert slow["rank"] == 2
    assert slow["above_median_pct"] == pytest.approx(30.0)


def test_parameters_are_overridable_like_a_rules(tmp_path):
    trace = copy_trace("Memcpy HtoD (Pageable -> Device)", 64 << 20, 10_000)
    found = trace.judge(tmp_path, overrides={"HostToDeviceCopies_pageable_pct": 15})
    assert not found["HostToDeviceCopies"].triggered
    assert found["HostToDeviceCopies"].params["pageable_pct"] == 15


def test_a_trace_without_steps_or_iterations_is_judged_over_its_whole_span(tmp_path):
    trace = Trace()  # torch.profiler without a schedule writes no ProfilerStep
    trace.host("cpu_op", "aten::conv2d", 0, 100_000)
    trace.host(
        "cpu_op", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 100_000, 25_000
    )
    found = trace.judge(tmp_path)["DataLoading"]
    assert found.triggered
    rank = found.evidence["ranks"]["0"]
    assert (rank["steps"], rank["step_ns"], rank["window"]) == (
        0,
        125 * MS,
        "the whole profile (no steps annotated, no repeating iteration found)",
    )
    assert rank["share_pct"] == pytest.approx(20.0)
