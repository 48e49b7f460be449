"""Insights benchmark: every analysis and rule on a synthetic 16-rank job, against HTA.

A job of ``--events`` trace events over ``--ranks`` ranks (CPU operators, CUDA launches,
kernels, copies and NCCL kernels overlapping computation, in profiler steps) plus an hour of
system metrics for two nodes. Our side runs ``insights.pure.by_rank.insights_by_rank`` as the insights task does (all trace
analyses, the operator table included, and the recommendations read from the trace, a rank at a
time), builds the rules' inputs
from the events and runs the full ProfilerReport. HTA 0.5 runs its equivalent analyses (temporal, idle-time, kernel breakdown,
comm–comp overlap, launch statistics, memory-bandwidth and queue-length summaries, for every
rank) on the same events, handed to it as the DataFrames its parser would build (parsing
10M events of JSON would dominate its time; neither side's parsing is counted).

    .venv/bin/python bench/insights.py [--events 10000000] [--ranks 16]

The last line reads ``RESULT insights_vs_hta=<HTA time / our time> events=<n>``.
"""

from __future__ import annotations

import argparse
import gc
import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from profiler_app.analysis import RankTrace, frames
from profiler_app.analysis.events import ANALYSIS_COLUMNS
from profiler_app.analysis.frames import JobData, metrics_frame
from profiler_app.insights.pure.by_rank import insights_by_rank
from profiler_app.insights.pure.report import profiler_report
from profiler_app.insights.pure.rules import params_from_overrides
from profiler_app.lib.memory import freed_memory_kept
from profiler_app.traces.event_model import build_event_model
from tracefmt.columns import empty_columns
from tracefmt.kinds import EventKind

US = 1_000
STEPS = 100
MAIN_STREAM, COMM_STREAM = 7, 20
OPS = [f"aten::op_{i}" for i in range(40)]
KERNELS = [f"void synthetic_kernel_{i}<float>(float*, int)" for i in range(150)]
COMM_KERNEL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
MEMCPY, MEMSET = "Memcpy DtoD (Device -> Device)", "Memset (Device)"
LAUNCH, COPY_CALL, SET_CALL = "cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync"
COMM_CALL = "cudaLaunchKernelExC"
ANNOTATIONS = ["## forward ##", "## backward ##", "Optimizer.step#SGD.step", "nccl:all_reduce"]
STRINGS = [
    "",
    "aten::view",
    *OPS,
    *KERNELS,
    COMM_KERNEL,
    MEMCPY,
    MEMSET,
    LAUNCH,
    COPY_CALL,
    SET_CALL,
    COMM_CALL,
    *ANNOTATIONS,
    *[f"ProfilerStep#{i}" for i in range(STEPS)],
]
ID = {s: i for i, s in enumerate(STRINGS)}


def synthetic_rank(rank: int, n_events: int, rng: np.random.Generator) -> pd.DataFrame:
    """One rank's events in the model's columns; 4 events per launch (op, call, GPU op, view)."""
    comm_per_step = 4
    per_step_fixed = 4 + 2 * comm_per_step  # step + 3 annotations + comm calls and kernels
    units = (n_events - STEPS * per_step_fixed) // 4
    # CPU thread (track 0): op [call] view, back to back with small gaps.
    op_dur = rng.integers(15 * US, 60 * US, units)
    view_dur = rng.integers(1 * US, 4 * US, units)
    span = op_dur + 1 * US + view_dur + 2 * US
    op_start = 10**12 * (rank + 1) + np.concatenate(([0], np.cumsum(span)[:-1]))
    call_start = op_start + 3 * US
    call_dur = rng.integers(3 * US, 9 * US, units)
    view_start = op_start + op_dur + 1 * US
    # GPU ops on the main stream: kernels, 8 % copies, 2 % sets, each after its call returns.
    draw = rng.random(units)
    gpu_kind = np.where(draw < 0.08, EventKind.GPU_MEMCPY, EventKind.KERNEL)
    gpu_kind = np.where(draw > 0.98, EventKind.GPU_MEMSET, gpu_kind).astype(np.uint8)
    gpu_dur = np.exp(rng.normal(np.log(20 * US), 1.0, units)).astype(np.int64) + 500
    ready = call_start + call_dur + rng.integers(1 * US, 5 * US, units)
    before = np.concatenate(([0], np.cumsum(gpu_dur)[:-1]))
    gpu_start = before + np.maximum.accumulate(ready - before)  # a stream runs one op at a time
    kernel_name = np.array([ID[k] for k in KERNELS])[rng.integers(0, len(KERNELS), units)]
    gpu_name = np.where(gpu_kind == EventKind.KERNEL, kernel_name, ID[MEMCPY])
    gpu_name = np.where(gpu_kind == EventKind.GPU_MEMSET, ID[MEMSET], gpu_name)
    call_name = np.where(gpu_kind == EventKind.KERNEL, ID[LAUNCH], ID[COPY_CALL])
    call_name = np.where(gpu_kind == EventKind.GPU_MEMSET, ID[SET_CALL], call_name)
    correlation = np.arange(1, units + 1, dtype=np.int64)
    nbytes = np.where(gpu_kind == EventKind.KERNEL, -1, rng.integers(1 << 10, 1 << 26, units))

    # Steps, their annotations and NCCL kernels on a second stream launched by thread 1.
    bounds = np.linspace(0, units, STEPS + 1).astype(np.int64)
    first, last = bounds[:-1], bounds[1:] - 1
    step_start = op_start[first] - 1 * US
    step_end = view_start[last] + view_dur[last] + 1 * US
    middle = op_start[(first + last) // 2]
    comm_at = (middle[:, None] + np.arange(comm_per_step) * 200 * US).ravel()
    comm_dur = rng.integers(500 * US, 3000 * US, len(comm_at))
    comm_corr = units + 1 + np.arange(len(comm_at))
    parts = [
        # kind, track, name, start, dur, correlation, device, stream, bytes
        (
            EventKind.CPU_OP,
            0,
            np.array([ID[o] for o in OPS])[rng.integers(0, len(OPS), units)],
            op_start,
            op_dur,
            -1,
            -1,
            -1,
            -1,
        ),
        (EventKind.CUDA_RUNTIME, 0, call_name, call_start, call_dur, correlation, -1, -1, -1),
        (gpu_kind, 2, gpu_name, gpu_start, gpu_dur, correlation, rank, MAIN_STREAM, nbytes),
        (EventKind.CPU_OP, 0, ID["aten::view"], view_start, view_dur, -1, -1, -1, -1),
        (
            EventKind.USER_ANNOTATION,
            0,
            [ID[f"ProfilerStep#{i}"] for i in range(STEPS)],
            step_start,
            step_end - step_start,
            -1,
            -1,
            -1,
            -1,
        ),
        (
            EventKind.USER_ANNOTATION,
            0,
            ID["## forward ##"],
            step_start + 1,
            middle - step_start - 2,
            -1,
            -1,
            -1,
            -1,
        ),
        (
            EventKind.USER_ANNOTATION,
            0,
            ID["## backward ##"],
            middle - 1 * US // 2,
            step_end - middle - 2,
            -1,
            -1,
            -1,
            -1,
        ),
        (EventKind.USER_ANNOTATION, 1, ID["nccl:all_reduce"], middle, 800 * US, -1, -1, -1, -1),
        (
            EventKind.CUDA_RUNTIME,
            1,
            ID[COMM_CALL],
            comm_at,
            np.full(len(comm_at), 10 * US),
            comm_corr,
            -1,
            -1,
            -1,
        ),
        (
            EventKind.KERNEL,
            3,
            ID[COMM_KERNEL],
            comm_at + 30 * US,
            comm_dur,
            comm_corr,
            rank,
            COMM_STREAM,
            -1,
        ),
    ]
    n = sum(len(np.atleast_1d(p[3])) for p in parts)
    columns = empty_columns(n)
    at = 0
    for kind, track, name, start, dur, corr, device, stream, nb in parts:
        size = len(np.atleast_1d(start))
        rows = slice(at, at + size)
        for col, value in (
            ("kind", kind),
            ("track", track),
            ("name", name),
            ("start_ns", start),
            ("dur_ns", dur),
            ("correlation", corr),
            ("external_id", corr),
            ("device", device),
            ("stream", stream),
            ("bytes", nb),
        ):
            columns[col][rows] = value
        at += size
    # As a store holds them: by track and start, with the event model the ingest adds.
    order = np.lexsort((columns["start_ns"], columns["track"]))
    columns = {col: values[order] for col, values in columns.items()}
    columns.update(build_event_model(columns, STRINGS))
    return pd.DataFrame(columns)


def synthetic_metrics(ranks: int, rng: np.random.Generator) -> pd.DataFrame:
    """An hour of samples every 100 ms: 8 GPUs (util, memory) and 8 cores per node; the last
    node's GPUs are starved, so that LowGPUUtilization and LoadBalancing have work to report."""
    nodes = max(1, ranks // 8)
    times = 10**12 + np.arange(36_000, dtype=np.int64) * 100_000_000
    frames = []
    for node in range(nodes):
        for device in range(8):
            busiest = 100 if node < nodes - 1 or nodes == 1 else 40
            for metric, low, high in (
                ("gpu_util_pct", 20, busiest),
                ("gpu_mem_util_pct", 30, 60),
                ("cpu_util_pct", 10, 95),
            ):
                frames.append(
                    metrics_frame(
                        times + device,
                        [f"algo-{node + 1}"] * len(times),
                        np.full(len(times), device),
                        [metric] * len(times),
                        rng.uniform(low, high, len(times)),
                    )
                )
        frames.append(
            metrics_frame(
                times,
                [f"algo-{node + 1}"] * len(times),
                np.full(len(times), -1),
                ["cpu_iowait_pct"] * len(times),
                rng.uniform(0, 5, len(times)),
            )
        )
    return pd.concat(frames, ignore_index=True)


def _steps(trace: RankTrace, node: str) -> pd.DataFrame:
    """The rank's steps as the job's Step rows hold them (``insights.inputs``)."""
    steps = trace.step_events
    names = trace.names[steps["name"].to_numpy()].astype(str)
    mode = np.where(np.char.find(np.char.lower(names), "eval") >= 0, frames.EVAL, frames.TRAIN)
    return frames.steps_frame(
        np.full(len(steps), trace.rank),
        np.full(len(steps), node, dtype=object),
        steps["step"].to_numpy(),
        names,
        steps["start_ns"].to_numpy(),
        steps["dur_ns"].to_numpy(),
        mode,
    )


def ours(traces: list[RankTrace], metrics: pd.DataFrame) -> Any:
    # As the insights task reads a job: a rank at a time (analyses, recommendations over the
    # same complete-steps window, framework time, collective calls), then combined, with the
    # memory freed on the way kept for reuse.
    with freed_memory_kept():
        read = insights_by_rank(traces, params_from_overrides(None))
        assert read is not None
        steps = pd.concat([_steps(t, f"algo-{t.rank // 8 + 1}") for t in traces], ignore_index=True)
        framework = read.framework
        report = profiler_report(
            JobData(metrics, steps, framework, job_start_ns=10**12),
            job_name="bench",
            recommendations=read.found,
        )
    return read.analyses, report


def hta_frames(traces: list[RankTrace]) -> Any:
    """An HTA ``TraceAnalysis`` over the same events, as HTA's parser would have built it."""
    from hta.common.trace import Trace
    from hta.common.trace_symbol_table import TraceSymbolTable
    from hta.trace_analysis import TraceAnalysis

    categories = {
        EventKind.CPU_OP: "cpu_op",
        EventKind.USER_ANNOTATION: "user_annotation",
        EventKind.CUDA_RUNTIME: "cuda_runtime",
        EventKind.KERNEL: "kernel",
        EventKind.GPU_MEMCPY: "gpu_memcpy",
        EventKind.GPU_MEMSET: "gpu_memset",
    }
    symbols = TraceSymbolTable()
    symbols.add_symbols(STRINGS)
    symbols.add_symbols(categories.values())
    cat_of = np.full(256, -1, dtype=np.int64)
    for kind, name in categories.items():
        cat_of[int(kind)] = symbols.get_sym_id_map()[name]
    trace = Trace.__new__(Trace)
    trace.symbol_table, trace.traces, trace.meta_data, trace.is_parsed = symbols, {}, {}, True
    for t in traces:
        e = t.events
        on_gpu = e["stream"].to_numpy() >= 0
        index = np.arange(len(e))
        corr = e["correlation"].to_numpy()
        # index_correlation: the index of the event at the other end of the launch.
        linked = pd.DataFrame({"corr": corr, "index": index, "gpu": on_gpu})[corr >= 0]
        pairs = linked[~linked["gpu"]].merge(linked[linked["gpu"]], on="corr")
        index_correlation = np.where(corr >= 0, 0, -1)
        index_correlation[pairs["index_x"]] = pairs["index_y"]
        index_correlation[pairs["index_y"]] = pairs["index_x"]
        dur = e["dur_ns"].to_numpy()
        frame = pd.DataFrame(
            {
                "ts": e["start_ns"].to_numpy(),
                "dur": dur,
                "end": e["start_ns"].to_numpy() + dur,
                "name": e["name"].to_numpy().astype(np.int64),
                "cat": cat_of[e["kind"].to_numpy()],
                "pid": np.where(on_gpu, t.rank, 1000 + t.rank),
                "tid": np.where(on_gpu, e["stream"], e["track"]),
                "stream": e["stream"].to_numpy(),
                "correlation": corr,
                "index": index,
                "index_correlation": index_correlation,
                "memory_bw_gbps": np.where(
                    e["bytes"] >= 0, e["bytes"] / np.maximum(dur, 1), np.nan
                ),
            }
        )
        trace.traces[t.rank] = frame
    # What HTA's loader does next: leave out the last profiler step, then index by "index".
    trace._filter_irrelevant_gpu_kernels(False)
    for rank, frame in trace.traces.items():
        trace.traces[rank] = frame.set_index("index", drop=False).rename_axis(None)
    analysis = TraceAnalysis.__new__(TraceAnalysis)
    analysis.t = trace
    return analysis


def hta(analysis: Any, ranks: list[int]) -> Any:
    return (
        analysis.get_temporal_breakdown(visualize=False),
        analysis.get_idle_time_breakdown(
            ranks=ranks,
            visualize=False,
            show_idle_interval_stats=True,
            consecutive_kernel_delay=30_000,
        ),
        analysis.get_gpu_kernel_breakdown(visualize=False),
        analysis.get_comm_comp_overlap(visualize=False),
        analysis.get_cuda_kernel_launch_stats(
            ranks=ranks, visualize=False, runtime_cutoff=50_000, launch_delay_cutoff=100_000
        ),
        analysis.get_memory_bw_summary(ranks=ranks),
        analysis.get_queue_length_summary(ranks=ranks),
    )


def timed(label: str, fn: Callable[[], Any]) -> tuple[Any, float]:
    """(result, CPU seconds). CPU time, not wall time, is compared: on a shared machine other
    processes stretch wall time unevenly between the two sides; both sides are single-threaded
    Python + numpy, so CPU time is the work each did."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{label:<44} {cpu:8.2f} s CPU {wall:8.2f} s wall", flush=True)
    return value, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--ranks", type=int, default=16)
    args = parser.parse_args()
    logging.getLogger("hta").setLevel(logging.ERROR)
    rng = np.random.default_rng(7)
    per_rank = args.events // args.ranks
    # The columns RankTrace.from_store reads from a timeline store.
    traces, _ = timed(
        "generate events",
        lambda: [
            RankTrace(r, synthetic_rank(r, per_rank, rng)[ANALYSIS_COLUMNS], STRINGS)
            for r in range(args.ranks)
        ],
    )
    metrics = synthetic_metrics(args.ranks, rng)
    n_events = sum(len(t.events) for t in traces)
    print(f"{n_events:,} events over {args.ranks} ranks, {len(metrics):,} metric samples")
    (analyses, report), our_s = timed(
        "ours: all analyses + rules + report", lambda: ours(traces, metrics)
    )
    analysis, _ = timed("hta: build its DataFrames (not counted)", lambda: hta_frames(traces))
    their, hta_s = timed(
        "hta: its equivalent analyses", lambda: hta(analysis, list(range(args.ranks)))
    )
    # Same data, same answers: the headline numbers side by side.
    temporal = their[0].set_index("rank")
    for row in analyses.temporal.head(2).itertuples():
        print(
            f"rank {row.rank} idle ns: ours {row.idle_ns:,.0f}  hta {temporal.loc[row.rank, 'idle_time(us)']:,.0f}"
        )
    print("triggered rules:", [r.rule for r in report.results if r.triggered])
    print(f"ours {our_s:.2f} s, HTA {hta_s:.2f} s (CPU time)")
    print(f"RESULT insights_vs_hta={hta_s / our_s:.1f} events={n_events}")


if __name__ == "__main__":
    main()
