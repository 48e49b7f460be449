"""Traces of accelerators other than CUDA and ROCm: MTIA writes every device op in one category
(``mtia_ccp_events``) and names its copies ``dma_*`` and its waits ``event_wait``; XPU, HPU and
PrivateUse1 backends launch through their own runtime calls. Every panel counts the same
kernels, copies are copies, a wait is a kernel typed by its name as HTA types it (computation),
launches are the calls HTA counts and every linked device op is in the wider count.

The expected figures are computed from the event lists below, independently of the product."""

import json

import pytest

from profiler_app.insights.models import InsightsStatus
from tests.insights.helpers import compute_here
from tests.timeline.jobs import parse_paths
from tests.traces.synthetic import complete_event

x = complete_event  # short: the traces below are tables of events

pytestmark = [pytest.mark.django_db(transaction=True)]

STEPS = 4
STEP_US = 1000


def accelerator_trace(runtime: str, device: str, ops: list[tuple[str, str, int]]) -> list[dict]:
    """``STEPS`` steps; in each, one ``runtime`` call per op (name, call, µs) enqueues it on
    the device (category ``device``), linked by correlation id."""
    events, correlation = [], 1
    for step in range(STEPS):
        t0 = step * STEP_US
        events += [
            x("user_annotation", f"ProfilerStep#{step}", t0, STEP_US),
            x("cpu_op", "aten::linear", t0 + 10, 300),
        ]
        for k, (name, call, dur) in enumerate(ops):
            events.append(x(runtime, call, t0 + 20 + 20 * k, 10, correlation=correlation))
            events.append(
                x(
                    device,
                    name,
                    t0 + 100 + 220 * k,
                    dur,
                    pid=0,
                    tid=3,
                    device=0,
                    stream=3,
                    correlation=correlation,
                )
            )
            correlation += 1
    return events


MTIA_LAUNCH = "runFunction - job_prep_and_submit_for_execution"  # HTA's name of MTIA's launch
MTIA_OPS = [
    ("fc_fwd_kernel", MTIA_LAUNCH, 100),
    ("dma_h2d", "mtiaMemcpyAsync", 50),
    ("event_wait", "waitEvent", 200),
    ("relu_kernel", MTIA_LAUNCH, 30),
]


def parsed_with_insights(user, tmp_path, events):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    job = parse_paths(user, "accelerator", [("algo-1", 0, path)])
    row = compute_here(job)
    assert row.status == InsightsStatus.DONE, row.error
    return job


def expected(ops, pick) -> tuple[int, int]:
    """(runs, ns) over the steps of the ops ``pick`` selects by name."""
    durations = [dur for name, _, dur in ops if pick(name)]
    return STEPS * len(durations), STEPS * sum(durations) * 1000


def test_it_reads_mtia_copies_and_waits_by_name(api, user, tmp_path):
    job = parsed_with_insights(
        user, tmp_path, accelerator_trace("mtia_runtime", "mtia_ccp_events", MTIA_OPS)
    )
    launched = expected(MTIA_OPS, lambda n: n.endswith("_kernel"))
    copies = expected(MTIA_OPS, lambda n: n.startswith("dma"))
    waits = expected(MTIA_OPS, lambda n: n == "event_wait")
    # HTA lists the wait among the GPU kernels, as computation (its name is no copy or sync).
    kernels = expected(MTIA_OPS, lambda n: not n.startswith("dma"))
    dashboard = api.get(f"/api/jobs/{job.id}/dashboard/").json()
    totals = dashboard["totals"]
    # One count of kernels in every panel: the totals, kernel time, kernel count, precision.
    assert (totals["kernel_runs"], totals["kernel_ns"]) == kernels
    for panel in ("kernel_time", "kernel_count"):
        assert (dashboard[panel]["total_count"], dashboard[panel]["total_ns"]) == kernels
    assert sum(r["count"] for r in dashboard["precision"]["rows"]) == kernels[0]
    assert totals["compute_ns"] == kernels[1]
    # MTIA writes the wait in its kernels' category: it is no CUDA sync.
    assert (totals["memory_ns"], totals["sync_ns"]) == (copies[1], 0)
    activity = {r["kind"]: (r["count"], r["total_ns"]) for r in dashboard["gpu_activity"]["rows"]}
    assert activity == {"kernel": kernels, "memcpy": copies}
    assert kernels == (launched[0] + waits[0], launched[1] + waits[1])
    [copy_row] = dashboard["memory_ops"]["rows"]
    assert (copy_row["kind"], copy_row["count"], copy_row["total_ns"]) == ("Memcpy HtoD", *copies)
    listed = {k["name"]: k for k in api.get(f"/api/jobs/{job.id}/kernels/").json()["kernels"]}
    assert listed["event_wait"]["category"] == "COMP"

    analyses = api.get(f"/api/jobs/{job.id}/analyses/").json()
    types = {r["kernel_type"]: r["time_ns"] for r in analyses["kernel_types"]}
    assert types["COMP"] == kernels[1] and "OTHER" not in types
    # HTA's launches are MTIA's runFunction calls; every call that enqueued a device op (the
    # copy's and the wait's too) is in the wider count.
    [findings] = analyses["launch_findings"]
    assert findings["launches"] == launched[0]
    assert findings["all_launches"] == STEPS * len(MTIA_OPS)


XPU_OPS = [
    ("gemm_kernel", "zeCommandListAppendLaunchKernel", 120),
    ("Memcpy DtoH", "zeCommandListAppendMemoryCopy", 40),
]


@pytest.mark.parametrize(
    ("runtime", "device"),
    [("xpu_runtime", "kernel"), ("privateuse1_runtime", "kernel"), ("hpu_op", "kernel")],
)
def test_it_counts_the_launches_of_any_runtime(api, user, tmp_path, runtime, device):
    ops = XPU_OPS
    events = accelerator_trace(runtime, device, ops)
    for event in events:  # a copy is written in its own category, as Kineto does
        if event["name"].startswith("Memcpy"):
            event["cat"] = "gpu_memcpy"
    job = parsed_with_insights(user, tmp_path, events)
    analyses = api.get(f"/api/jobs/{job.id}/analyses/").json()
    [findings] = analyses["launch_findings"]
    # HTA counts none of these runtimes' calls as launches; the wider count holds them all.
    assert (findings["launches"], findings["all_launches"]) == (0, STEPS * len(ops))
    kernels = expected(ops, lambda n: n.endswith("_kernel"))
    totals = api.get(f"/api/jobs/{job.id}/dashboard/").json()["totals"]
    assert (totals["kernel_runs"], totals["kernel_ns"]) == kernels


def test_a_blocking_copy_is_not_a_launch(api, user, tmp_path):
    """``cudaMemcpy`` waits for its copy; HTA and we count only the calls that enqueue."""
    ops = [
        ("void gemm_kernel", "cudaLaunchKernel", 100),
        ("Memcpy DtoH", "cudaMemcpy", 40),
        ("Memcpy HtoD", "cudaMemcpyAsync", 40),
    ]
    events = accelerator_trace("cuda_runtime", "kernel", ops)
    for event in events:
        if event["name"].startswith("Memcpy"):
            event["cat"] = "gpu_memcpy"
    job = parsed_with_insights(user, tmp_path, events)
    [findings] = api.get(f"/api/jobs/{job.id}/analyses/").json()["launch_findings"]
    assert findings["launches"] == STEPS * 2


# Intel XPU as Kineto's XPU plugin writes it (libkineto's XPU tests): Unified Runtime calls in
# ``xpu_runtime``, kernels in ``kernel``, copies in ``gpu_memcpy`` named with M for host memory.
XPU_UR_OPS = [
    ("gemm_kernel", "urEnqueueKernelLaunch", 120),
    ("Memcpy M2D", "urEnqueueUSMMemcpy", 40),
    ("Memcpy D2M", "urEnqueueUSMMemcpy", 30),
]


def test_xpu_copies_to_and_from_host_memory_have_their_direction(api, user, tmp_path):
    events = accelerator_trace("xpu_runtime", "kernel", XPU_UR_OPS)
    for event in events:
        if event["name"].startswith("Memcpy"):
            event["cat"] = "gpu_memcpy"
    job = parsed_with_insights(user, tmp_path, events)
    dashboard = api.get(f"/api/jobs/{job.id}/dashboard/").json()
    rows = {r["kind"]: (r["count"], r["total_ns"]) for r in dashboard["memory_ops"]["rows"]}
    assert rows == {
        "Memcpy HtoD": expected(XPU_UR_OPS, lambda n: n == "Memcpy M2D"),
        "Memcpy DtoH": expected(XPU_UR_OPS, lambda n: n == "Memcpy D2M"),
    }
    kernels = expected(XPU_UR_OPS, lambda n: n.endswith("_kernel"))
    totals = dashboard["totals"]
    assert (totals["kernel_runs"], totals["kernel_ns"]) == kernels
    [findings] = api.get(f"/api/jobs/{job.id}/analyses/").json()["launch_findings"]
    assert (findings["launches"], findings["all_launches"]) == (0, STEPS * len(XPU_UR_OPS))
