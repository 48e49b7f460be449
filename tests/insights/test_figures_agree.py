"""One figure, one number: every page that states a figure over a window states the same value.

Each shared trace is loaded as a job once per window (whole trace, complete steps); the
Dashboard, Kernels, Cluster, Compare and Insights APIs and the report are read, and each figure
they share must agree exactly. The aggregates (written at ingest) and the Insights analyses
(computed from the events) are two independent paths to the same definition, and the raw JSON
is a third for the kernel counts.
"""

from __future__ import annotations

import gzip
import html
import json
from dataclasses import dataclass
from decimal import Decimal

import pytest

from profiler_app.core.models import TrainingJob
from profiler_app.insights import logic as insights
from profiler_app.insights.models import InsightsStatus, JobInsights
from profiler_app.traces.window import COMPLETE_STEPS, WHOLE_TRACE, WINDOWS
from tests.timeline.jobs import parse_job
from tests.traces.expected import DATA, GPU_OP_CATEGORIES, LEGACY_CATEGORIES, expected, ns

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

SINGLE = [
    "gpu_training_rank0.pt.trace.json.gz",
    "nccl_rank0.json.gz",
    "amd_mi250_small.json.gz",
    "cpu_only_rank34.pt.trace.json.gz",
    "h100_cnn_kineto.json.gz",
    "resnet50_pt18_workers4.pt.trace.json.gz",
]
MULTI = ["multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz"]
JOBS = [[t] for t in SINGLE] + [MULTI]
FIGURES = [
    "kernel_runs",
    "kernel_ns",
    "gpu_op_runs",
    "gpu_op_ns",
    "compute_ns",
    "comm_ns",
    "memory_ns",
    "other_ns",
]


CALL_CATEGORIES = {"cuda_runtime", "cuda_driver"}
# The calls HTA 0.5's launch statistics count (hta/analyzers/cuda_kernel_analysis.py).
HTA_LAUNCH_CALLS = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync"}
RUNTIME_CUTOFF_NS = 50_000  # HTA's default runtime_cutoff (50 µs)


@dataclass(frozen=True)
class Raw:
    """A trace's figures in a window, counted from its raw JSON."""

    gpu_op_runs: int
    kernel_runs: int
    kernel_ns: int
    short_kernels: int


def raw_figures(trace: str, window: str) -> Raw:
    """The complete steps keep the GPU ops whose launch started before the last ProfilerStep
    (and ops without a launch id that started before). Kernels are ``cat == "kernel"`` events
    not named as copies or sets (``Memcpy…``, ``Memset…``, ``dma…``, which count as memory
    operations); a short kernel is a GPU op whose launch call (same correlation id, one of the
    calls HTA counts as launches) took at most the runtime cut-off and longer than the op ran
    (HTA's rule)."""
    with gzip.open(DATA / trace) as f:
        document = json.load(f, parse_float=Decimal)
    events = document["traceEvents"] if isinstance(document, dict) else document
    spans = [e for e in events if e.get("ph") == "X"]

    def category(e: dict) -> str:
        cat = e.get("cat", "")
        return LEGACY_CATEGORIES.get(cat, cat).lower()

    ops = [e for e in spans if category(e) in GPU_OP_CATEGORIES]
    step_starts = [
        ns(e["ts"])
        for e in spans
        if "ProfilerStep" in e.get("name", "") and category(e) not in GPU_OP_CATEGORIES
    ]
    if (
        window == COMPLETE_STEPS
        and len({e["name"] for e in spans if "ProfilerStep" in e["name"]}) > 1
    ):
        last = max(step_starts)
        launched = {
            e["args"]["correlation"]
            for e in spans
            if category(e) not in GPU_OP_CATEGORIES
            and ns(e["ts"]) < last
            and "correlation" in e.get("args", {})
        }

        def kept(e: dict) -> bool:
            correlation = e.get("args", {}).get("correlation", -1)
            return correlation in launched if correlation >= 0 else ns(e["ts"]) < last

        ops = [e for e in ops if kept(e)]
    kernels = [
        e
        for e in ops
        if category(e) == "kernel" and not e["name"].startswith(("Memcpy", "Memset", "dma"))
    ]
    calls = {
        e["args"]["correlation"]: ns(e["dur"])
        for e in spans
        if category(e) in CALL_CATEGORIES
        and e["name"] in HTA_LAUNCH_CALLS
        and "correlation" in e.get("args", {})
    }
    pairs = [
        (calls[c], ns(e["dur"]))
        for e in ops
        if (c := e.get("args", {}).get("correlation", -1)) in calls
    ]
    return Raw(
        gpu_op_runs=len(ops),
        kernel_runs=len(kernels),
        kernel_ns=sum(ns(e["dur"]) for e in kernels),
        short_kernels=sum(1 for cpu, gpu in pairs if cpu <= RUNTIME_CUTOFF_NS and gpu < cpu),
    )


@pytest.fixture(params=JOBS, ids=lambda traces: traces[0].split("/")[0])
def traces(request) -> list[str]:
    return request.param


@pytest.mark.parametrize("window", WINDOWS)
def test_every_page_states_the_same_figures(api, user, traces, window):
    job = parse_job(
        user,
        "figures",
        [("algo-1", rank, t) for rank, t in enumerate(traces)],
        status="completed",
        window=window,
    )
    insights.compute(job.id, insights.request_run(job.id))

    dashboard = api.get(f"/api/jobs/{job.id}/dashboard/").json()
    kernels = api.get(f"/api/jobs/{job.id}/kernels/").json()
    cluster = api.get(f"/api/jobs/{job.id}/cluster/").json()
    compare = api.get("/api/compare/", {"a": job.id, "b": job.id}).json()
    analyses = api.get(f"/api/jobs/{job.id}/analyses/").json()
    rules = api.get(f"/api/jobs/{job.id}/insights/").json()["report"]
    report = api.get(f"/api/jobs/{job.id}/insights/report.html").content.decode()
    assert analyses["status"] == "done"

    # Every response names the same window.
    label = dashboard["window"]["label"]
    for named in (kernels["window"], cluster["window"], compare["a"]["window"], analyses["window"]):
        assert named == dashboard["window"]
    assert dashboard["window"]["window"] == window and html.escape(label) in report

    totals = dashboard["totals"]
    assert kernels["totals"] == cluster["totals"] == totals
    # The raw JSON, a path of its own.
    raw = [raw_figures(t, window) for t in traces]
    assert totals["gpu_op_runs"] == sum(r.gpu_op_runs for r in raw)
    if window == WHOLE_TRACE:
        assert totals["gpu_op_runs"] == sum(sum(expected(t).kernel_count.values()) for t in traces)

    # The Kernels table's rows add up to the totals.
    rows = kernels["kernels"]
    assert sum(r["count"] for r in rows) == totals["gpu_op_runs"]
    assert sum(r["count"] for r in rows if r["category"] != "MEM") == totals["kernel_runs"]
    assert sum(r["total_ns"] for r in rows if r["category"] == "COMP") == totals["compute_ns"]
    # The Dashboard's kernel panels.
    assert dashboard["kernel_time"]["total_count"] == totals["kernel_runs"]
    assert dashboard["kernel_time"]["total_ns"] == totals["kernel_ns"]
    # The Cluster page's devices.
    devices = cluster["devices"]
    assert sum(d["kernel_ns"] for d in devices) == totals["kernel_ns"]
    for column, figure in (
        ("compute_ns", "compute_ns"),
        ("comm_ns", "comm_ns"),
        ("memory_ns", "memory_ns"),
    ):
        assert sum(d[column] for d in devices) == totals[figure]
    # Compare's headline metrics.
    metrics = {m["metric"]: m["a"] for m in compare["metrics"]}
    for figure in (
        "kernel_runs",
        "kernel_ns",
        "gpu_op_runs",
        "compute_ns",
        "comm_ns",
        "memory_ns",
        "sync_ns",
    ):
        assert metrics[figure] == totals[figure]
    # Compare's Kernels panel counts what "Kernel time" counts: kernels, no copies or sets.
    empty = TrainingJob.objects.create(name="empty", owner=user, status="completed", window=window)
    against = api.get("/api/compare/", {"a": job.id, "b": empty.id}).json()
    assert against["kernels"]["total_delta_ns"] == -totals["kernel_ns"]
    assert against["kernels"]["removed"] == len({r["name"] for r in rows if r["category"] != "MEM"})
    # Insights, computed from the events rather than the aggregates.
    assert {f: analyses["totals"][f] for f in FIGURES} == {f: totals[f] for f in FIGURES}
    # Kernel std: one definition (the sample standard deviation), the Kernels table's from the
    # aggregates' sums and Insights' from the runs; per name on a one-rank job.
    if len(traces) == 1:
        table = {r["name"]: r for r in rows}
        for row in analyses["kernels"]:
            assert row["std_ns"] == pytest.approx(table[row["name"]]["std_ns"], rel=1e-6, abs=1e-3)

    # One kernel time and one kernel count, everywhere, equal to the raw JSON's.
    kernel_ns = sum(r.kernel_ns for r in raw)
    assert (totals["kernel_runs"], totals["kernel_ns"]) == (
        sum(r.kernel_runs for r in raw),
        kernel_ns,
    )
    assert {
        "dashboard": dashboard["kernel_time"]["total_ns"],
        "cluster": sum(d["kernel_ns"] for d in devices),
        "compare": metrics["kernel_ns"],
        "compare kernels panel": -against["kernels"]["total_delta_ns"],
        "insights": analyses["totals"]["kernel_ns"],
    } == dict.fromkeys(
        ("dashboard", "cluster", "compare", "compare kernels panel", "insights"), kernel_ns
    )
    # One short-kernel count per rank: Insights' launch findings, its LaunchOverhead verdict and
    # the report, equal to the raw JSON's.
    findings = {f["rank"]: f for f in analyses["launch_findings"]}
    verdict = next(r for r in rules["recommendations"] if r["rule"] == "LaunchOverhead")
    for rank, figures in enumerate(raw):
        if not findings.get(rank, {}).get("launches"):
            # No launch HTA counts on this rank (ROCm's calls are none): nothing to judge.
            assert figures.short_kernels == 0
            continue
        short = findings[rank]["short_kernels"]
        assert short == figures.short_kernels
        judged = verdict["evidence"]["ranks"][str(rank)]
        if judged["window"].startswith("the steady state"):
            # No steps: the verdict leaves the first iteration out as warm-up (issue 26).
            assert judged["short_kernels"] <= short
        else:
            assert judged["short_kernels"] == short
        assert (
            f"<tr><td>{rank}</td><td>{findings[rank]['launches']:,}</td><td>{short:,}</td>"
            in report
        )

    # Steps: the Dashboard's histogram, Compare's statistics and the Cluster page's ranks.
    steps = len(dashboard["steps"]["durations_ns"])
    assert compare["steps"]["a"]["count"] == steps
    if not cluster["steps_inferred"]:
        assert sum(r["steps"] for r in cluster["ranks"]) == steps

    # Communication–computation overlap: Cluster (aggregates) and Insights (events).
    overlap = {
        r["rank"]: r["overlap_pct"] for r in cluster["ranks"] if r["overlap_pct"] is not None
    }
    insights_overlap = {r["rank"]: r["overlap_pct"] for r in analyses["overlap"]}
    for rank, pct in overlap.items():
        assert insights_overlap[rank] == pytest.approx(pct, abs=0.01)


def test_the_complete_steps_leave_out_the_last_step_and_say_so(api, user):
    trace = "gpu_training_rank0.pt.trace.json.gz"
    whole = parse_job(user, "whole", [("algo-1", 0, trace)])
    steps = parse_job(user, "steps", [("algo-1", 0, trace)], window=COMPLETE_STEPS)
    a = api.get(f"/api/jobs/{whole.id}/dashboard/").json()
    b = api.get(f"/api/jobs/{steps.id}/dashboard/").json()
    raw_steps = expected(trace).steps
    assert a["window"] == {
        "window": WHOLE_TRACE,
        "label": "whole trace",
        "steps_total": len(raw_steps),
        "steps_kept": len(raw_steps),
        "steps_dropped": 0,
        "last_step_dropped": False,
        "switch_note": None,
    }
    numbers = sorted(s for s, _, _ in raw_steps)
    assert b["window"] == {
        "window": COMPLETE_STEPS,
        "label": f"complete steps: from the trace's start to step #{numbers[-1]}'s start "
        f"(#{numbers[0]}–#{numbers[-2]}, {len(numbers) - 1} of {len(numbers)} steps)",
        "steps_total": len(numbers),
        "steps_kept": len(numbers) - 1,
        "steps_dropped": 1,
        "last_step_dropped": True,
        "switch_note": None,
    }
    assert len(b["steps"]["durations_ns"]) == len(a["steps"]["durations_ns"]) - 1
    assert b["totals"]["kernel_runs"] < a["totals"]["kernel_runs"]
    # The dashboard's span ends where the last step starts.
    want = expected(trace)
    last_start = max(start for _, start, _ in raw_steps)
    assert a["profile_ns"] == want.end_ns - want.start_ns
    assert b["profile_ns"] == last_start - want.start_ns


def test_switching_the_window_recomputes_the_insights(api, user):
    job = parse_job(user, "switch", [("algo-1", 0, "gpu_training_rank0.pt.trace.json.gz")])
    response = api.patch(f"/api/jobs/{job.id}/", {"window": COMPLETE_STEPS}, format="json")
    assert response.status_code == 200 and response.json()["window"] == COMPLETE_STEPS
    # The change queued a computation of the insights over the new window.
    assert JobInsights.objects.get(job=job).status == InsightsStatus.QUEUED
    refused = api.patch(f"/api/jobs/{job.id}/", {"window": "last_step"}, format="json")
    assert refused.status_code == 400 and "window" in refused.json()
