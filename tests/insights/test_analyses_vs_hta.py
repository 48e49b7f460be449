"""Our trace analyses against Holistic Trace Analysis 0.5 on the real traces in tests/data.

Tolerance: 0.5 % relative (plus HTA's own rounding where it rounds its output to two
decimals). On these traces every compared number agrees exactly except where a comment says
why HTA differs; docs/hta-differences.md lists where HTA is wrong and what we do instead.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import subprocess
from collections import defaultdict
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

from profiler_app.analysis import RankTrace, analyze
from profiler_app.insights.pure.rules import params_from_overrides
from profiler_app.traces import ingest_trace
from tests.conftest import DATA_DIR
from tests.insights.hta_reference import reference
from tracefmt.kinds import GPU_OP_KINDS

pytestmark = pytest.mark.slow

RELATIVE = 0.005
TRACE_SETS = {
    "gpu_training": ["gpu_training_rank0.pt.trace.json.gz"],
    "nccl": ["nccl_rank0.json.gz"],
    "multirank": ["multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz"],
    "amd": ["amd_mi250_small.json.gz"],
    "h100": ["h100_cnn_kineto.json.gz"],
    "resnet_pt18": ["resnet50_pt18_workers4.pt.trace.json.gz"],
}
HTA_TYPES = {"COMP": "COMPUTATION", "COMM": "COMMUNICATION", "MEM": "MEMORY"}
# Raw JSON categories, PyTorch 1.8's capitalised ones too.
GPU_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
COPY_CATEGORIES = {"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}
CALL_CATEGORIES = {"cuda_runtime", "cuda_driver", "Runtime"}
# A job's own launch cut-offs (µs), as a user sets them on the Insights page.
CUTOFFS = {
    "KernelLaunchStatistics_runtime_cutoff": 5,
    "KernelLaunchStatistics_launch_delay_cutoff": 20,
    "IdleTime_consecutive_kernel_delay_us": 5,
    "KernelBreakdown_num_kernels": 3,
    "KernelBreakdown_duration_ratio": 0.5,
}
with_cutoffs: dict = {}  # trace set -> analyze() with CUTOFFS
stores: dict = {}  # trace set -> its RankTraces


def close(ours: float, theirs: float, rounding: float = 0.0) -> bool:
    return abs(ours - theirs) <= RELATIVE * abs(theirs) + rounding + 1e-9


# Our summary columns -> the keys HTA writes them under (pandas' describe() names).
HTA_SUMMARY_KEYS = {
    "count": "count",
    "mean": "mean",
    "std": "std",
    "min": "min",
    "p25": "25%",
    "p50": "50%",
    "p75": "75%",
    "max": "max",
}
SUMMARY_COLUMNS = ("mean", "std", "min", "p25", "p50", "p75", "max")


def assert_summary_agrees(row, theirs: dict, columns, rounding: float = 0.0) -> None:
    """Each of ``columns`` of one summary row is close to HTA's figure for it: the summaries
    (queue length, memory bandwidth, idle intervals) differ only in which columns HTA fills."""
    for column in columns:
        assert close(row[column], theirs[HTA_SUMMARY_KEYS[column]], rounding), column


@pytest.fixture(scope="module", params=list(TRACE_SETS))
def compared(request, tmp_path_factory):
    work = tmp_path_factory.mktemp(request.param)
    files = [DATA_DIR / name for name in TRACE_SETS[request.param]]
    traces = []
    for rank, path in enumerate(files):
        ingest_trace(path, "kineto", work / f"store-{rank}")
        traces.append(RankTrace.from_store(rank, work / f"store-{rank}"))
    stores[request.param] = traces
    with_cutoffs[request.param] = analyze(traces, params_from_overrides(CUTOFFS))
    return request.param, analyze(traces), reference(files, work)


def test_it_agrees_on_the_temporal_breakdown(compared):
    _, ours, hta = compared
    assert len(ours.temporal) == len(hta["temporal"])
    for row, theirs in zip(ours.temporal.itertuples(), hta["temporal"], strict=True):
        assert row.rank == theirs["rank"]
        assert close(row.idle_ns, theirs["idle_time(us)"])
        assert close(row.compute_ns, theirs["compute_time(us)"])
        assert close(row.non_compute_ns, theirs["non_compute_time(us)"])
        assert close(row.span_ns, theirs["kernel_time(us)"])
        assert close(row.idle_pct, theirs["idle_time_pctg"], rounding=0.005)


def test_it_agrees_on_the_kernel_type_breakdown(compared):
    _, ours, hta = compared
    totals = ours.kernel_types.groupby("kernel_type")["time_ns"].sum()
    labels = {
        " overlapping ".join(HTA_TYPES[t] for t in k.split("+")): v for k, v in totals.items()
    }
    theirs = {row["kernel_type"]: row["sum"] for row in hta["kernel_types"]}
    assert labels.keys() == theirs.keys()
    for label, value in theirs.items():
        assert close(labels[label], value), label


def test_it_agrees_on_every_kernel_statistic(compared):
    _, ours, hta = compared
    mine = ours.kernels.set_index(["rank", "name"])
    assert len(mine) == len(hta["kernels"])
    for theirs in hta["kernels"]:
        row = mine.loc[(theirs["rank"], theirs["name"])]
        assert HTA_TYPES[row["type"]] == theirs["kernel_type"]
        assert close(row["sum_ns"], theirs["sum (us)"])
        assert close(row["min_ns"], theirs["min (us)"])
        assert close(row["max_ns"], theirs["max (us)"])
        assert close(row["mean_ns"], theirs["mean (us)"])
        assert close(row["std_ns"], theirs["stddev"])
        assert row["count"] == round(theirs["sum (us)"] / theirs["mean (us)"])


def check_top_kernels(top, hta_top: list[dict], hta_all: list[dict]) -> None:
    """The same rows as HTA's grouped breakdown, with the same totals; each row's other
    statistics from HTA's ungrouped table (HTA's own grouped rows hold statistics of the
    kernels' totals instead: its "max" of "others" is the largest total, not the longest run)."""
    assert sorted((r.rank, HTA_TYPES[r.type], r.name) for r in top.itertuples()) == sorted(
        (r["rank"], r["kernel_type"], r["name"]) for r in hta_top
    )
    mine = top.set_index(["rank", "name", "type"])
    runs = {(r["rank"], r["name"]): r for r in hta_all}
    for theirs in hta_top:
        key = (theirs["rank"], theirs["name"])
        row = mine.loc[(*key, *(t for t, v in HTA_TYPES.items() if v == theirs["kernel_type"]))]
        assert close(row["sum_ns"], theirs["sum (us)"]), key
        if theirs["name"] != "others":
            assert row["kernels"] == 1
            assert close(row["max_ns"], runs[key]["max (us)"])
            assert close(row["min_ns"], runs[key]["min (us)"])
            continue
        # "others": every kernel of that rank and type that has no row of its own.
        kept = set(top[(top["rank"] == key[0]) & (top["type"] == row.name[2])]["name"])
        grouped = [
            r
            for r in hta_all
            if r["rank"] == key[0]
            and r["kernel_type"] == theirs["kernel_type"]
            and r["name"] not in kept
        ]
        assert row["kernels"] == len(grouped) > 1
        assert row["count"] == sum(round(r["sum (us)"] / r["mean (us)"]) for r in grouped)
        assert close(row["max_ns"], max(r["max (us)"] for r in grouped))
        assert close(row["min_ns"], min(r["min (us)"] for r in grouped))
        assert close(row["mean_ns"], row["sum_ns"] / row["count"])


def test_it_groups_the_top_kernels_as_hta_does(compared):
    name, ours, hta = compared
    check_top_kernels(ours.top_kernels, hta["top_kernels"], hta["kernels"])
    check_top_kernels(with_cutoffs[name].top_kernels, hta["top_3_kernels"], hta["kernels"])
    # Every kernel is in one row.
    assert ours.top_kernels["kernels"].sum() == len(ours.kernels)
    assert np.isclose(ours.top_kernels["sum_ns"].sum(), ours.kernels["sum_ns"].sum())
    if name in ("gpu_training", "nccl", "multirank", "h100"):  # a real grouping
        assert (ours.top_kernels["name"] == "others").any()
        assert (with_cutoffs[name].top_kernels["name"] == "others").sum() > (
            ours.top_kernels["name"] == "others"
        ).sum() or len(with_cutoffs[name].top_kernels) < len(ours.top_kernels)


def test_the_grouped_kernels_spread_is_over_their_runs(compared):
    """The "others" row's standard deviation is that of all its kernels' runs, computed here
    from the events themselves."""
    name, ours, _ = compared
    for row in ours.top_kernels[ours.top_kernels["name"] == "others"].itertuples():
        trace = next(t for t in stores[name] if t.rank == row.rank)
        ops = trace.complete_steps().gpu_ops
        kept = ours.top_kernels[
            (ours.top_kernels["rank"] == row.rank) & (ours.top_kernels["type"] == row.type)
        ]["name"]
        names = trace.names[ops["name"].to_numpy()]
        runs = ops["dur_ns"].to_numpy()[
            (ops["type"] == row.type).to_numpy() & ~np.isin(names, kept)
        ]
        assert len(runs) == row.count
        assert np.isclose(row.std_ns, runs.std(ddof=1), rtol=1e-9)
        assert np.isclose(row.mean_ns, runs.mean(), rtol=1e-12)


def test_it_agrees_on_communication_computation_overlap(compared):
    name, ours, hta = compared
    for row, theirs in zip(ours.overlap.itertuples(), hta["overlap"], strict=True):
        if theirs["comp_comm_overlap_pctg"] is None:  # no communication kernels
            assert row.comm_ns == 0 and math.isnan(row.overlap_pct)
        else:
            assert close(row.overlap_pct, theirs["comp_comm_overlap_pctg"], rounding=0.005)
    if name in ("nccl", "multirank"):
        assert (ours.overlap["overlap_pct"] > 0).all()


def test_it_agrees_on_the_idle_time_breakdown(compared):
    _, ours, hta = compared
    mine = ours.idle.set_index(["rank", "stream", "category"])["idle_ns"]
    listed = set()
    for theirs in hta["idle"]:
        key = (theirs["rank"], theirs["stream"], theirs["idle_category"])
        if key not in mine.index:
            # HTA lists a stream with a single op (so no gap) with 0 idle time.
            assert theirs["idle_time"] == 0
            continue
        listed.add(key)
        assert close(mine[key], theirs["idle_time"]), key
    # Categories HTA leaves out had no gaps.
    assert (mine[~mine.index.isin(listed)] == 0).all()


def test_it_never_reports_negative_idle_time(compared):
    _, ours, _ = compared
    assert len(ours.idle) and (ours.idle["idle_ns"] >= 0).all()
    assert (ours.idle_intervals["min"] >= 0).all()
    # HTA's default delay is 30 µs, not 30 ns: every kernel-wait gap is shorter than that.
    waits = ours.idle_intervals[ours.idle_intervals["category"] == "kernel_wait"]
    assert (waits["max"] < 30_000).all()


def test_a_jobs_own_idle_delay_splits_kernel_wait_from_other(compared):
    name, ours, hta = compared
    mine = with_cutoffs[name].idle.set_index(["rank", "stream", "category"])["idle_ns"]
    for theirs in hta["idle_5us"]:
        key = (theirs["rank"], theirs["stream"], theirs["idle_category"])
        assert close(mine.get(key, 0), theirs["idle_time"]), key
    by_default = ours.idle.set_index(["rank", "stream", "category"])["idle_ns"]
    kernel_wait = by_default.xs("kernel_wait", level="category")
    if (kernel_wait > 0).any():  # a real change from the default, or this proves nothing
        assert not np.array_equal(mine.to_numpy(), by_default.to_numpy())


def test_ops_overlapping_on_a_stream_add_no_idle_time(compared):
    """Two parts of one rank merged (here: the trace twice) overlap on every stream: the
    stream is idle exactly as long as with one copy, never less than zero."""
    name, ours, _ = compared
    traces = [
        RankTrace(t.rank, pd.concat([t.events, t.events], ignore_index=True), t.strings)
        for t in stores[name]
    ]
    doubled = analyze(traces)
    assert (doubled.idle["idle_ns"] >= 0).all()
    twice = doubled.idle.set_index(["rank", "stream", "category"])["idle_ns"]
    once = ours.idle.set_index(["rank", "stream", "category"])["idle_ns"]
    # A stream with a single op has a gap (of 0) only when doubled.
    assert twice.reindex(once.index).equals(once)
    assert (twice[~twice.index.isin(once.index)] == 0).all()


def test_it_agrees_on_the_idle_interval_statistics(compared):
    _, ours, hta = compared
    mine = ours.idle_intervals.set_index(["rank", "stream", "category"])
    for theirs in hta["idle_stats"]:
        if not theirs["count"]:
            continue
        row = mine.loc[(theirs["rank"], theirs["stream"], theirs["idle_category"])]
        assert row["count"] == theirs["count"]
        assert_summary_agrees(
            row, theirs, ("mean", "min", "p25", "p50", "p75", "max"), rounding=0.005
        )
        if theirs["std"] is not None:
            assert close(row["std"], theirs["std"], rounding=0.005)


# HTA's launch statistics know only these calls (and MTIA's); ROCm's and the driver API's
# launches (cuDNN calls cuLaunchKernel) are in the wider count only (all_launches).
HTA_LAUNCH_CALLS = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync"}
OTHER_LAUNCH_CALLS = {
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "hipLaunchKernel",
    "hipExtModuleLaunchKernel",
    "hipModuleLaunchKernel",
    "hipMemcpyAsync",
    "hipMemsetAsync",
    "hipMemcpyWithStream",
}


def raw_launches(path, names: set[str]) -> int:
    """Calls named ``names`` that launched a GPU op, before the last ProfilerStep (when there
    are two or more), counted in the raw JSON."""
    with gzip.open(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    launched = {e["args"]["correlation"] for e in events if e.get("cat") in GPU_CATEGORIES}
    steps = [
        float(e["ts"])
        for e in events
        if e.get("cat") in ("user_annotation", "Operator") and e["name"].startswith("ProfilerStep#")
    ]
    last = max(steps) if len(steps) > 1 else math.inf
    return sum(
        1
        for e in events
        if e.get("cat") in CALL_CATEGORIES
        and e["name"] in names
        and e["args"].get("correlation") in launched
        and float(e["ts"]) < last
    )


def test_it_agrees_on_every_kernel_launch(compared):
    name, ours, hta = compared
    for rank, rows in hta["launches"].items():
        mine = ours.launches[ours.launches["rank"] == int(rank)].set_index("correlation")
        path = DATA_DIR / TRACE_SETS[name][int(rank)]
        assert len(rows) == raw_launches(path, HTA_LAUNCH_CALLS)
        extra = mine[~mine["call"].isin(HTA_LAUNCH_CALLS)]
        assert len(extra) == raw_launches(path, OTHER_LAUNCH_CALLS)
        assert len(extra) == {"amd": 16, "h100": 5}.get(name, 0)
        assert (mine["hta"] == mine["call"].isin(HTA_LAUNCH_CALLS)).all()
        mine = mine[mine["call"].isin(HTA_LAUNCH_CALLS)]
        assert len(mine) == len(rows)
        theirs = {r["correlation"]: r for r in rows}
        joined = mine.loc[list(theirs)]
        assert np.array_equal(
            joined["cpu_dur_ns"], [theirs[c]["cpu_duration"] for c in joined.index]
        )
        assert np.array_equal(
            joined["gpu_dur_ns"], [theirs[c]["gpu_duration"] for c in joined.index]
        )
        assert np.array_equal(
            joined["launch_delay_ns"], [theirs[c]["launch_delay"] for c in joined.index]
        )
        # HTA's findings (its visualisation's rules) over HTA's launches; the wider count beside.
        findings = ours.launch_findings.set_index("rank").loc[int(rank)]
        cpu = np.array([r["cpu_duration"] for r in rows])
        gpu = np.array([r["gpu_duration"] for r in rows])
        delay = np.array([r["launch_delay"] for r in rows])
        assert findings["launches"] == len(rows)
        assert findings["all_launches"] == len(rows) + len(extra)
        assert findings["short_kernels"] == ((cpu <= 50_000) & (gpu < cpu)).sum()
        assert findings["runtime_outliers"] == (cpu > 50_000).sum()
        assert findings["delay_outliers"] == (delay > 100_000).sum()
        # The GPU-shorter-than-launch condition alone would count more (the old rule).
        if name == "gpu_training":
            assert findings["short_kernels"] < (gpu < cpu).sum()


def test_a_jobs_own_launch_cutoffs_count_the_outliers(compared):
    name, _, hta = compared
    findings = with_cutoffs[name].launch_findings.set_index("rank")
    for rank, rows in hta["launches"].items():
        if not rows:  # ROCm: HTA counts no launch, so no outlier either
            assert name == "amd"
            assert findings.loc[int(rank), ["launches", "runtime_outliers"]].tolist() == [0, 0]
            continue
        cpu = np.array([r["cpu_duration"] for r in rows])
        gpu = np.array([r["gpu_duration"] for r in rows])
        delay = np.array([r["launch_delay"] for r in rows])
        assert findings.loc[int(rank), "runtime_outliers"] == (cpu > 5_000).sum()
        assert findings.loc[int(rank), "delay_outliers"] == (delay > 20_000).sum()
        assert findings.loc[int(rank), "short_kernels"] == ((cpu <= 5_000) & (gpu < cpu)).sum()
        # A real change from the defaults, or the test would prove nothing.
        assert (cpu > 5_000).sum() != (cpu > 50_000).sum()


def test_it_agrees_on_the_queue_length_summary(compared):
    _, ours, hta = compared
    mine = ours.queue_length_summary.set_index(["rank", "stream"])
    assert len(mine) == len(hta["queue_length"])
    for theirs in hta["queue_length"]:
        row = mine.loc[(theirs["rank"], theirs["stream"])]
        assert_summary_agrees(row, theirs, ("count", *SUMMARY_COLUMNS))


def test_it_agrees_on_the_memory_bandwidth_summary(compared):
    name, ours, hta = compared
    mine = ours.memory_bandwidth_summary.set_index(["rank", "kind"])
    if name == "amd":  # HTA reads sizes only on the copy; ROCm writes them on its call
        assert hta["memory_bw"] == [] and list(mine.index) == [(0, "Memcpy HtoD")]
        return  # tests/traces/test_accelerator_copies.py checks the figures
    assert len(mine) == len(hta["memory_bw"])
    for theirs in hta["memory_bw"]:
        row = mine.loc[(theirs["rank"], theirs["name"])]
        assert row["count"] == theirs["count"]
        assert_summary_agrees(row, theirs, SUMMARY_COLUMNS)


def test_copies_keep_the_bandwidth_kineto_recorded(compared):
    """The ingest keeps each copy's "memory bandwidth (GB/s)" exactly as the trace wrote it
    (from the ns-precise duration); bytes / stored duration would differ where durations are
    whole microseconds."""
    name, ours, _ = compared
    for rank, trace in enumerate(stores[name]):
        with gzip.open(DATA_DIR / TRACE_SETS[name][rank], "rt") as fh:
            events = json.load(fh)["traceEvents"]
        written = {
            e["args"]["correlation"]: e["args"].get("memory bandwidth (GB/s)", math.nan)
            for e in events
            if e.get("cat") in COPY_CATEGORIES
        }
        copies = GPU_OP_KINDS[1:]  # memcpy, memset
        ops = trace.events[trace.events["kind"].isin(copies)]
        assert len(ops) == len(written)
        expected = [written[c] for c in ops["correlation"]]
        if name == "amd":  # no recorded bandwidth: the call's size over the duration
            expected = ops["bytes"] / ops["dur_ns"]
        assert np.array_equal(ops["bandwidth_gbps"], expected, equal_nan=True)
        if name == "multirank":
            rounded = ops["bytes"] / ops["dur_ns"].clip(lower=1)
            assert (abs(rounded - ops["bandwidth_gbps"]) > 0.005 * ops["bandwidth_gbps"]).any()
    if name == "amd":  # ROCm writes neither on the copy; the size comes from its call
        assert (ops["bytes"] == 2560).all()


def test_hta_rounds_a_nanosecond_trace_to_whole_microseconds(tmp_path):
    """Read as it is, a trace with fractional-µs timestamps loses up to 2 µs per op in HTA
    (start rounded up, end down); ours keeps the nanoseconds."""
    path = DATA_DIR / "h100_cnn_kineto.json.gz"
    hta = reference([path], tmp_path, exact=False)
    with gzip.open(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    hta_us: dict = defaultdict(int)
    exact_ns: dict = defaultdict(int)
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            hta_us[e["name"]] += math.floor(e["ts"] + e["dur"]) - math.ceil(e["ts"])
            exact_ns[e["name"]] += round(Decimal(str(e["dur"])) * 1000)
    ingest_trace(path, "kineto", tmp_path / "store")
    ours = analyze([RankTrace.from_store(0, tmp_path / "store")]).kernels.set_index("name")
    assert len(hta["kernels"]) == len(ours) == len(exact_ns)
    off = 0
    for theirs in hta["kernels"]:
        name = theirs["name"]
        assert theirs["sum (us)"] == hta_us[name]
        assert ours.loc[name, "sum_ns"] == exact_ns[name]
        off += abs(1000 * theirs["sum (us)"] - exact_ns[name]) > RELATIVE * exact_ns[name]
    # Every kernel's total is off by more than 0.5 % in HTA (the sum by 13.9 %), and two ops
    # shorter than a microsecond get negative durations.
    assert off == len(exact_ns)
    assert sum(1000 * t["sum (us)"] for t in hta["kernels"]) < 0.87 * sum(exact_ns.values())
    assert any(t["min (us)"] < 0 for t in hta["kernels"])
    assert (ours["min_ns"] > 0).all()


def test_a_cpu_only_trace_has_empty_gpu_analyses_where_hta_fails(tmp_path):
    path = DATA_DIR / "cpu_only_rank34.pt.trace.json.gz"
    with pytest.raises(subprocess.CalledProcessError) as failed:
        reference([path], tmp_path)
    assert b"IndexError" in failed.value.stderr  # its temporal breakdown indexes no kernels
    ingest_trace(path, "kineto", tmp_path / "store")
    ours = analyze([RankTrace.from_store(0, tmp_path / "store")])
    for frame in (ours.temporal, ours.kernels, ours.top_kernels, ours.idle, ours.launches):
        assert frame.empty
    with gzip.open(path, "rt") as fh:
        host = {"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver"}
        operators = {
            re.sub(r"^ProfilerStep#\d+$", "ProfilerStep*", e["name"])  # as key_averages()
            for e in json.load(fh)["traceEvents"]
            if e.get("cat") in host
        }
    assert (
        set(ours.operators["name"])
        == operators
        == {
            "aten::empty",
            "gloo:all_reduce",
            "ProfilerStep*",
        }
    )
