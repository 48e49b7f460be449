"""The GPU rules judge every shared trace with GPU work, from kernel busy time where the trace has
no NVML samples; what a trace truly lacks is named (computed in this process, as a worker would)."""

import gzip
import json

import pytest

from profiler_app.insights import logic, queries
from profiler_app.insights.models import InsightsStatus, JobInsights
from profiler_app.insights.pure.rules.recommendations import RECOMMENDATIONS
from tests.conftest import DATA_DIR
from tests.insights.helpers import compute_here, rules_by_name
from tests.timeline.jobs import TWO_RANKS, parse_job

pytestmark = [pytest.mark.django_db(transaction=True)]

GPU_TRACES = [
    "gpu_training_rank0.pt.trace.json.gz",
    "nccl_rank0.json.gz",
    "amd_mi250_small.json.gz",
    "h100_cnn_kineto.json.gz",
    "resnet50_pt18_workers4.pt.trace.json.gz",
]


def rules_of(user, name: str, parts: list[tuple[str, int, str]]) -> dict[str, dict]:
    """The job's system rules and trace recommendations, by name."""
    job = parse_job(user, name, parts)
    return rules_by_name(compute_here(job))


def has_data_loader_events(trace: str) -> bool:
    with gzip.open(DATA_DIR / trace, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    return any(
        e.get("name", "").startswith("enumerate(DataLoader)")
        or "DataLoaderIter" in e.get("name", "")
        for e in events
    )


@pytest.mark.parametrize("trace", GPU_TRACES)
def test_gpu_rules_judge_an_imported_trace(user, trace):
    rules = rules_of(user, "imported", [("algo-1", 0, trace)])
    low = rules["LowGPUUtilization"]
    assert low["status"] in ("issue_found", "no_issue"), low["not_evaluated_reason"]
    assert low["evidence"]["source"] == "kernel busy time (no NVML samples in this profile)"
    usage = rules["OverallSystemUsage"]
    assert usage["status"] == "no_issue"
    assert usage["evidence"]["gpu_source"] == low["evidence"]["source"]
    for recommendation in RECOMMENDATIONS:  # every one judges a trace with GPU work
        found = rules[recommendation]
        if recommendation == "DataLoading" and not has_data_loader_events(trace):
            # Without a data-loader event the wait cannot be told: not evaluated, never 0.
            assert found["status"] == "not_evaluated"
            assert "no data-loader events" in found["not_evaluated_reason"]
            continue
        if recommendation == "LaunchOverhead" and trace.startswith("amd"):
            # HTA counts no ROCm call as a launch, and neither do we.
            assert found["status"] == "not_evaluated"
            assert "ROCm's calls are not among them" in found["not_evaluated_reason"]
            continue
        assert found["status"] in ("issue_found", "no_issue"), found["not_evaluated_reason"]
    memory = rules["GPUMemoryIncrease"]
    assert memory["status"] == "not_evaluated"
    assert "no samples of the GPU memory in use" in memory["not_evaluated_reason"]


def test_load_balancing_compares_the_gpus_of_two_ranks(user):
    rules = rules_of(user, "two-ranks", TWO_RANKS)
    balance = rules["LoadBalancing"]
    assert balance["status"] in ("issue_found", "no_issue"), balance["not_evaluated_reason"]
    assert set(balance["evidence"]["gpus"]) == {
        "algo-1 GPU 0",
        "algo-2 GPU 1",
    }  # rank 1 ran on GPU 1
    assert balance["evidence"]["source"].startswith("kernel busy time")


def test_the_report_holds_rules_recommendations_and_analyses(user):
    job = parse_job(user, "report", [("algo-1", 0, "resnet50_pt18_workers4.pt.trace.json.gz")])
    row = compute_here(job)
    html = queries.report_page(job, job.window, base_url="")
    assert html is not None
    for heading in (
        "<h1>Recommendations from the trace</h1>",
        "<h1>Trace analyses</h1>",
        'id="HostToDeviceCopies"',
        'id="LowGPUUtilization"',
        "Launch findings",
    ):
        assert heading in html, heading
    # The figures are the analyses' own, for the same window.
    [temporal] = row.analyses["temporal"]
    assert f"<td>{int(temporal['idle_ns']):,}</td>" in html
    [findings] = row.analyses["launch_findings"]
    assert f"<td>{int(findings['launches']):,}</td>" in html
    # Each finding's place opens the timeline of this job on the event.
    copies = next(r for r in row.report["recommendations"] if r["rule"] == "HostToDeviceCopies")
    link = copies["time_ranges"][0]["timeline_url"]
    assert link.startswith(f"/jobs/{job.id}/timeline?t=") and "&ranks=0&sel=" in link
    assert f'href="{link.replace("&", "&amp;")}"' in html


def test_it_queues_a_jobs_missing_insights_from_the_sweep_not_from_a_page(user, client_for):
    """A job parsed before insights existed: reading its pages queues nothing (it says the run is
    queued), the beat sweep queues it once."""
    job = parse_job(user, "no-insights-yet", [("algo-1", 0, "amd_mi250_small.json.gz")])
    JobInsights.objects.filter(job=job).delete()
    api = client_for(user)
    for path in ("insights/", "analyses/"):
        assert api.get(f"/api/jobs/{job.id}/{path}").json()["status"] == InsightsStatus.QUEUED
    assert api.get(f"/api/jobs/{job.id}/insights/report.html").status_code == 404
    assert not JobInsights.objects.filter(job=job).exists()

    assert job.id in logic.queue_missing()
    assert JobInsights.objects.get(job=job).generation == 1
    assert job.id not in logic.queue_missing()
