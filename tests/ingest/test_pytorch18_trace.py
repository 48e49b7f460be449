"""A PyTorch 1.8 trace (2021 category names, ``async`` flows) through upload, the real worker and
every read API; each figure is computed independently from the raw JSON."""

import gzip
import json
from collections import Counter
from decimal import Decimal

import pytest

from profiler_app.core.models import Node, TrainingJob
from profiler_app.insights.models import JobInsights
from tests.ingest.helpers import upload_parsed
from tests.insights.test_insights_api import wait_insights
from tests.traces.expected import DATA, expected, ns

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

TRACE = "resnet50_pt18_workers4.pt.trace.json.gz"
ENQUEUE_CALLS = {"cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync"}


@pytest.fixture(scope="module")
def raw():
    with gzip.open(DATA / TRACE) as f:
        events = [e for e in json.load(f, parse_float=Decimal)["traceEvents"] if e["ph"] == "X"]
    steps = sorted(
        (ns(e["ts"]), ns(e["dur"])) for e in events if e["name"].startswith("ProfilerStep#")
    )
    runtime = {e["args"]["correlation"]: e for e in events if e["cat"] == "Runtime"}
    runs = [e for e in events if e["cat"] in ("Kernel", "Memcpy", "Memset")]
    matched = [e for e in runs if e["args"].get("correlation") in runtime]
    # The insights' window: GPU work launched before the last (truncated) step starts.
    last_step_ns = steps[-1][0]
    launched_in_window = [
        e
        for e in matched
        if runtime[e["args"]["correlation"]]["name"] in ENQUEUE_CALLS
        and ns(runtime[e["args"]["correlation"]]["ts"]) < last_step_ns
    ]
    bytes_by_op: Counter = Counter()
    for e in runs:
        if e["cat"] != "Kernel":
            bytes_by_op[e["name"][:11] if e["cat"] == "Memcpy" else "Memset"] += e["args"]["bytes"]
    return {
        "kernels": Counter(e["name"] for e in events if e["cat"] == "Kernel"),
        "steps": steps,
        "matched": matched,
        "launches": sum(
            1 for e in matched if runtime[e["args"]["correlation"]]["name"] in ENQUEUE_CALLS
        ),
        "launches_in_window": len(launched_in_window),
        "bytes": bytes_by_op,
        "first_kernel": min(
            (e for e in matched if e["cat"] == "Kernel"), key=lambda e: ns(e["ts"])
        ),
        "runtime": runtime,
    }


@pytest.fixture
def job(api, user, celery_worker_process):
    job = TrainingJob.objects.create(name="resnet50-pt18", owner=user, status="completed")
    done = upload_parsed(api, job, DATA / TRACE)
    assert done.warning == ""
    wait_insights(job)
    return job


def test_it_reads_every_figure_of_a_pytorch_18_trace(api, job, raw):
    want = expected(TRACE)
    kernels = api.get(f"/api/jobs/{job.id}/kernels/").json()["kernels"]
    assert {k["name"]: k["count"] for k in kernels} == dict(want.kernel_count)
    assert {k["name"]: k["total_ns"] for k in kernels} == dict(want.kernel_total_ns)
    assert sum(raw["kernels"].values()) == 9456

    summary = api.get(f"/api/jobs/{job.id}/summary/").json()
    assert summary["event_counts"]["kernel"] == 9456
    assert summary["event_counts"]["gpu_memcpy"] == 12
    assert summary["event_counts"]["gpu_memset"] == 351
    assert summary["event_counts"].get("other", 0) == 1  # the profiler's own "Trace" span
    assert summary["read_warnings"] == []

    dashboard = api.get(f"/api/jobs/{job.id}/dashboard/").json()
    assert dashboard["kernel_time"]["total_count"] == 9456
    assert dashboard["steps"]["durations_ns"] == [dur for _, dur in raw["steps"]]
    assert len(raw["steps"]) == 6
    copies = {r["kind"]: r["bytes"] for r in dashboard["memory_ops"]["rows"]}
    assert copies == dict(raw["bytes"])
    assert copies["Memcpy HtoD"] == 115_607_040

    analyses = api.get(f"/api/jobs/{job.id}/analyses/").json()
    [findings] = analyses["launch_findings"]
    assert findings["launches"] == raw["launches"]  # the whole trace, the job's window
    # Switched to the complete steps, the insights are recomputed over them.
    generation = JobInsights.objects.get(job=job).generation
    api.patch(f"/api/jobs/{job.id}/", {"window": "complete_steps"}, format="json")
    wait_insights(job, after_generation=generation)
    analyses = api.get(f"/api/jobs/{job.id}/analyses/").json()
    [findings] = analyses["launch_findings"]
    assert findings["launches"] == raw["launches_in_window"]

    # The node's GPU: this trace has no device list, so it is the one GPU that ran kernels.
    assert Node.objects.get(job=job).gpu_count == 1


def test_it_links_each_old_style_kernel_to_its_launch(api, job, raw):
    kernel = raw["first_kernel"]
    found = api.get(
        f"/api/jobs/{job.id}/timeline/search/", {"q": kernel["name"], "limit": 500}
    ).json()
    hit = next(r for r in found["results"] if int(r["start_ns"]) == ns(kernel["ts"]))
    details = api.get(f"/api/jobs/{job.id}/timeline/event/", {"id": hit["id"]}).json()
    launch = raw["runtime"][kernel["args"]["correlation"]]
    assert details["run"]["kind"] == "kernel"
    assert details["launch"]["kind"] == "cuda_runtime"
    assert details["launch"]["name"] == launch["name"]
    assert int(details["launch"]["start_ns"]) == ns(launch["ts"])
    assert details["launch"]["correlation"] == kernel["args"]["correlation"]
