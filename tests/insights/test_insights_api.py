"""Insights API on a real A100 trace parsed and analysed by a real worker."""

import gzip
import importlib
import json
import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from rest_framework.test import APIClient

from profiler_app.core.models import PartState, TrainingJob
from profiler_app.insights.models import InsightsStatus, JobInsights, RuleOverrides
from profiler_app.traces.window import COMPLETE_STEPS
from tests.conftest import DATA_DIR, wait_for
from tests.ingest.helpers import upload, upload_parsed, wait_parsed
from tests.insights.converted import read_converted
from tests.traces.expected import launched_before_last_step, ns

TRACE = "gpu_training_rank0.pt.trace.json.gz"
RULE_NAMES = [
    "BatchSize",
    "CPUBottleneck",
    "GPUMemoryIncrease",
    "IOBottleneck",
    "LoadBalancing",
    "LowGPUUtilization",
    "OverallSystemUsage",
    "MaxInitializationTime",
    "OverallFrameworkMetrics",
    "StepOutlier",
]


def wait_insights(job, after_generation: int = 0) -> JobInsights:
    """The insights in the job's own window, once a run past ``after_generation`` ended."""

    def done():
        window = TrainingJob.objects.values_list("window", flat=True).get(pk=job.pk)
        own = JobInsights.objects.filter(job=job, window=window)
        row = own.filter(generation__gt=after_generation).first()
        finished = row and row.status in (InsightsStatus.DONE, InsightsStatus.FAILED)
        return row if finished else None

    row = wait_for(done, timeout=120, interval=0.3)
    assert row.status == InsightsStatus.DONE, row.error
    return row


def kernel_busy_percentiles(events: list[dict], before_ns: int) -> dict[int, float]:
    """Percentiles of the share of each 1 ms bucket (10 ms past 2,000 of them) in which a kernel
    ran: NVML's definition of utilisation, from the raw kernel intervals; over the buckets that
    start before ``before_ns`` (the complete steps)."""
    timed = [e for e in events if e.get("ph") in ("X", "i", "I")]
    start = min(ns(e["ts"]) for e in timed)
    end = max(ns(e["ts"]) + ns(e.get("dur", 0)) for e in timed)
    width = 1_000_000
    while (end - start) // width > 2000:
        width *= 10
    first = start // width
    busy = np.zeros((end - 1) // width - first + 1)
    reach = 0
    for lo, hi in sorted(
        (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in timed if e.get("cat") == "kernel"
    ):
        lo = max(lo, reach)  # the union of the intervals: overlapping streams count once
        reach = max(reach, hi)
        while lo < hi:
            bucket_end = (lo // width + 1) * width
            busy[lo // width - first] += min(hi, bucket_end) - lo
            lo = min(hi, bucket_end)
    pct = np.minimum(busy * 100 / width, 100)
    pct = pct[(first + np.arange(len(pct))) * width < before_ns]
    return {p: float(np.percentile(pct, p)) for p in (50, 95)}


def busy_view(ops: list[tuple[int, int]]) -> dict:
    """span and idle time of GPU ops given as (start_ns, end_ns)."""
    ops = sorted(ops)
    busy_ns, reach_ns = 0, ops[0][0]
    for start, end in ops:  # union of the ops' intervals
        busy_ns += max(0, end - max(start, reach_ns))
        reach_ns = max(reach_ns, end)
    span_ns = max(end for _, end in ops) - ops[0][0]
    return {"span_ns": span_ns, "idle_ns": span_ns - busy_ns}


def hta_view(trace: Path) -> dict:
    """What HTA's temporal breakdown sees in a Kineto trace, from its raw JSON."""
    with gzip.open(trace) as f:
        events = json.load(f, parse_float=Decimal)["traceEvents"]
    complete = [e for e in events if e.get("ph") == "X"]
    steps = sorted(
        (ns(e["ts"]), ns(e["dur"]))
        for e in complete
        if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
    )
    # HTA's view: GPU ops launched before the last (truncated) step starts.
    last_step_ns, launched = launched_before_last_step(complete)
    gpu_ops = [
        e
        for e in complete
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
        and e["args"].get("correlation") in launched
    ]
    ops = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in gpu_ops]
    return {
        "busy_pct": kernel_busy_percentiles(events, last_step_ns),
        "op_names": {e["name"] for e in gpu_ops},
        # The operator table covers the same window: host events before the last step, the
        # steps as one row as key_averages() lists them.
        "operator_names": {
            re.sub(r"^ProfilerStep#\d+$", "ProfilerStep*", e["name"])
            for e in complete
            if e.get("cat") in ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver")
            and ns(e["ts"]) < last_step_ns
        },
        "steps": steps,
        **busy_view(ops),
    }


@pytest.fixture(scope="module")
def raw():
    return hta_view(DATA_DIR / TRACE)


@pytest.fixture
def analysed_job(api, user, celery_worker_process):
    # HTA's window: the trace without its last, truncated, step.
    job = TrainingJob.objects.create(
        name="a100-insights",
        owner=user,
        status="completed",
        instance_type="ml.p4d.24xlarge",
        window=COMPLETE_STEPS,
    )
    upload_parsed(api, job, DATA_DIR / TRACE)
    wait_insights(job)
    return job


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_it_runs_the_rules_and_analyses_after_ingest(api, analysed_job, raw):
    body = api.get(f"/api/jobs/{analysed_job.id}/insights/").json()
    assert body["status"] == "done"
    report = body["report"]
    assert [r["rule"] for r in report["rules"]] == RULE_NAMES
    rules = {r["rule"]: r for r in report["rules"]}
    # An imported trace has no NVML samples: the GPU rules judge kernel busy time instead.
    low_gpu = rules["LowGPUUtilization"]
    # Busy GPUs, never under-used (idle gaps between the complete steps may read as fluctuating).
    assert low_gpu["evidence"]["nodes"]["algo-1"]["0"]["under_used_scans"] == 0
    assert low_gpu["evidence"]["source"].startswith("kernel busy time")
    gpu0 = low_gpu["evidence"]["nodes"]["algo-1"]["0"]
    assert gpu0["p50"] == pytest.approx(raw["busy_pct"][50])
    assert gpu0["p95"] == pytest.approx(raw["busy_pct"][95])
    # What the trace truly lacks is named, with how to record it.
    for rule in ("BatchSize", "CPUBottleneck", "GPUMemoryIncrease", "IOBottleneck"):
        assert rules[rule]["status"] == "not_evaluated"
        assert "profile the job with the collector" in rules[rule]["not_evaluated_reason"]
    assert rules["LoadBalancing"]["not_evaluated_reason"].endswith(
        "only one GPU has utilisation samples"
    )
    assert rules["MaxInitializationTime"]["status"] == "not_evaluated"
    assert rules["StepOutlier"]["status"] in ("issue_found", "no_issue")
    assert rules["StepOutlier"]["datapoints"] == len(raw["steps"]) - 1  # the complete steps

    analyses = api.get(f"/api/jobs/{analysed_job.id}/analyses/").json()
    assert analyses["status"] == "done"
    [temporal] = analyses["temporal"]
    assert temporal["rank"] == 0
    assert temporal["span_ns"] == raw["span_ns"]
    assert temporal["idle_ns"] == raw["idle_ns"]
    assert (
        temporal["idle_ns"] + temporal["compute_ns"] + temporal["non_compute_ns"]
        == (raw["span_ns"])
    )
    # Every kernel and operator, not a top N.
    assert analyses["kernels_total"] == len(analyses["kernels"]) == len(raw["op_names"])
    assert {k["name"] for k in analyses["kernels"]} == raw["op_names"]
    assert analyses["operators_total"] == len(analyses["operators"]) == len(raw["operator_names"])
    assert {o["name"] for o in analyses["operators"]} == raw["operator_names"]
    # HTA's breakdown: the top kernels of each type, the rest in one "others" row per type.
    assert {k["name"] for k in analyses["top_kernels"]} - {"others"} <= raw["op_names"]
    assert sum(k["kernels"] for k in analyses["top_kernels"]) == len(raw["op_names"])
    assert {(k["type"], k["name"]) for k in analyses["top_kernels"] if k["name"] == "others"} == {
        ("COMP", "others")
    }
    [findings] = analyses["launch_findings"]
    assert findings["launches"] > 0
    assert all(len(line["points"]) <= 400 for line in analyses["queue_length"])


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_overrides_re_run_the_rules_and_the_report_downloads(api, analysed_job):
    before = JobInsights.objects.get(job=analysed_job).generation
    [default_findings] = api.get(f"/api/jobs/{analysed_job.id}/analyses/").json()["launch_findings"]
    response = api.put(
        f"/api/jobs/{analysed_job.id}/insights/parameters/",
        {
            "StepOutlier_stddev": 1,
            "StepOutlier_n_outliers": 0,
            "KernelLaunchStatistics_runtime_cutoff": 0,
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    step = next(r for r in response.json()["rules"] if r["rule"] == "StepOutlier")
    values = {p["name"]: p["value"] for p in step["parameters"]}
    assert values["stddev"] == 1
    wait_insights(analysed_job, after_generation=before)
    rules = api.get(f"/api/jobs/{analysed_job.id}/insights/").json()["report"]["rules"]
    outlier = next(r for r in rules if r["rule"] == "StepOutlier")
    assert outlier["params"]["stddev"] == 1
    # With a 0 µs runtime cut-off every launch that took any CPU time is an outlier.
    [findings] = api.get(f"/api/jobs/{analysed_job.id}/analyses/").json()["launch_findings"]
    assert default_findings["runtime_outliers"] < findings["runtime_outliers"]
    assert findings["runtime_outliers"] == findings["launches"]

    download = api.get(f"/api/jobs/{analysed_job.id}/insights/report.html")
    assert download.status_code == 200
    assert download["Content-Disposition"] == (
        f'attachment; filename="profiler-report-{analysed_job.id}.html"'
    )
    html = download.content.decode()
    assert html.startswith("<!DOCTYPE html>") and "a100-insights" in html
    assert "ml.p4d.24xlarge" in html
    # Links are absolute in the downloaded file, and name the job's own timeline.
    assert 'href="/jobs/' not in html
    assert f'href="http://testserver/jobs/{analysed_job.id}/timeline?t=' in html


def upload_as_one_rank(api, job, files: list[tuple[Path, bytes]], kind: str) -> None:
    ids = [upload(api, job, path, kind=kind, content=data)["id"] for path, data in files]
    parts = wait_parsed(*ids)
    assert [p.state for p in parts] == [PartState.DONE] * len(files), [p.error for p in parts]


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_it_analyses_a_rank_uploaded_as_two_trace_files(api, user, celery_worker_process):
    """Both files name the same kernels: the merged rank has one strings table."""
    trace = DATA_DIR / "multirank_sampled" / "rank-0.json.gz"
    job = TrainingJob.objects.create(name="two-files-one-rank", owner=user, window=COMPLETE_STEPS)
    # Recompressed, so that the server does not take the copy for the same file.
    copy = gzip.compress(gzip.decompress(trace.read_bytes()), mtime=1)
    upload_as_one_rank(api, job, [(trace, trace.read_bytes()), (trace, copy)], kind="kineto")
    wait_insights(job)

    analyses = api.get(f"/api/jobs/{job.id}/analyses/").json()
    assert analyses["status"] == "done"
    [temporal] = analyses["temporal"]
    # The second file repeats the first one's GPU ops at the same times: same busy union.
    expected = hta_view(trace)
    assert (temporal["rank"], temporal["span_ns"], temporal["idle_ns"]) == (
        0,
        expected["span_ns"],
        expected["idle_ns"],
    )
    assert analyses["kernels_total"] == len(expected["op_names"])


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_it_analyses_a_rank_of_several_collector_chunks(api, user, celery_worker_process):
    chunks = sorted((DATA_DIR / "h100_collector").glob("*.pcol"))[:3]
    job = TrainingJob.objects.create(name="three-chunks-one-rank", owner=user)
    upload_as_one_rank(api, job, [(c, c.read_bytes()) for c in chunks], kind="collector")
    insights = wait_insights(job)
    assert insights.report["rules"] and insights.error == ""

    # The chunks are of the first format: the GPU ops launched in the steps Kineto recorded,
    # the span taken within each run of those steps and summed (the time between them was not
    # recorded).
    raw = read_converted(chunks)
    ops = [(op.start_ns, op.start_ns + op.dur_ns) for op in raw.gpu_ops]
    span_ns = 0
    for start, end in raw.windows:
        inside = [(a, b) for a, b in ops if start <= a < end]
        span_ns += max(b for _, b in inside) - min(a for a, _ in inside)
    busy_ns = busy_view(ops)["span_ns"] - busy_view(ops)["idle_ns"]
    expected = {"span_ns": span_ns, "idle_ns": span_ns - busy_ns}
    [temporal] = api.get(f"/api/jobs/{job.id}/analyses/").json()["temporal"]
    assert (temporal["span_ns"], temporal["idle_ns"]) == (expected["span_ns"], expected["idle_ns"])


@pytest.mark.django_db
def test_it_validates_overrides(api, user):
    job = TrainingJob.objects.create(name="overrides", owner=user)
    url = f"/api/jobs/{job.id}/insights/parameters/"
    body = api.get(url).json()
    assert body["overrides"] == {}
    cpu = next(r for r in body["rules"] if r["rule"] == "CPUBottleneck")
    threshold = next(p for p in cpu["parameters"] if p["name"] == "threshold")
    assert threshold == {
        "name": "threshold",
        "key": "CPUBottleneck_threshold",
        "type": "float",
        "default": 50,
        "value": 50,
    }

    unknown = api.put(url, {"Foo_bar": 1}, format="json")
    assert unknown.status_code == 400
    assert "unknown rule or analysis 'Foo'" in unknown.json()["detail"]
    no_param = api.put(url, {"CPUBottleneck_bogus": 1}, format="json")
    assert no_param.status_code == 400 and "no parameter 'bogus'" in no_param.json()["detail"]
    not_number = api.put(url, {"CPUBottleneck_threshold": "high"}, format="json")
    assert not_number.status_code == 400 and "must be a number" in not_number.json()["detail"]

    saved = api.put(url, {"CPUBottleneck_threshold": "40"}, format="json")
    assert saved.status_code == 200
    assert saved.json()["overrides"] == {"CPUBottleneck_threshold": "40"}
    cpu = next(r for r in saved.json()["rules"] if r["rule"] == "CPUBottleneck")
    assert next(p for p in cpu["parameters"] if p["name"] == "threshold")["value"] == 40


@pytest.mark.django_db
def test_a_job_without_data_says_so(api, user):
    job = TrainingJob.objects.create(name="empty-insights", owner=user)
    assert api.get(f"/api/jobs/{job.id}/insights/").json()["status"] == "no_data"
    assert api.get(f"/api/jobs/{job.id}/analyses/").json()["temporal"] == []
    assert api.get(f"/api/jobs/{job.id}/insights/report.html").status_code == 404
    assert api.get("/api/jobs/999999/insights/").status_code == 404


@pytest.mark.django_db
def test_everything_needs_a_login(user, client_for):
    job = TrainingJob.objects.create(name="private", owner=user)
    anonymous = APIClient()
    for path in ("insights/", "insights/parameters/", "insights/report.html", "analyses/"):
        assert anonymous.get(f"/api/jobs/{job.id}/{path}").status_code == 401
    put = anonymous.put(f"/api/jobs/{job.id}/insights/parameters/", {}, format="json")
    assert put.status_code == 401


@pytest.mark.django_db
def test_teammates_read_a_jobs_insights_but_only_its_owner_or_staff_tune_them(
    user, teammate, staff, client_for
):
    """Profiles are team-shared to read; the rules' parameters are the job's owner's to tune."""
    job = TrainingJob.objects.create(name="shared", owner=user)
    url = f"/api/jobs/{job.id}/insights/parameters/"
    refused = client_for(teammate).put(url, {"StepOutlier_stddev": 2}, format="json")
    assert (refused.status_code, refused.json()) == (
        403,
        {"detail": "Only the job's owner or a staff member can change it.", "code": "not_owner"},
    )
    assert client_for(teammate).get(url).json()["overrides"] == {}
    saved = client_for(user).put(url, {"StepOutlier_stddev": 2}, format="json")
    assert saved.status_code == 200
    by_staff = client_for(staff).put(url, {"StepOutlier_stddev": 3}, format="json")
    assert by_staff.status_code == 200
    assert client_for(teammate).get(url).json()["overrides"] == {"StepOutlier_stddev": 3}


@pytest.mark.django_db
def test_the_idle_delay_is_in_microseconds(api, user):
    job = TrainingJob.objects.create(name="idle-delay", owner=user)
    url = f"/api/jobs/{job.id}/insights/parameters/"
    idle = next(r for r in api.get(url).json()["rules"] if r["rule"] == "IdleTime")
    assert idle["parameters"] == [
        {
            "name": "consecutive_kernel_delay_us",
            "key": "IdleTime_consecutive_kernel_delay_us",
            "type": "float",
            "default": 30,
            "value": 30,
        },
    ]
    assert "µs" in idle["description"]
    saved = api.put(url, {"IdleTime_consecutive_kernel_delay_us": 2.5}, format="json")
    assert saved.status_code == 200
    idle = next(r for r in saved.json()["rules"] if r["rule"] == "IdleTime")
    assert idle["parameters"][0]["value"] == 2.5


@pytest.mark.django_db
def test_a_stored_nanosecond_idle_delay_keeps_its_meaning():
    """Overrides saved before the delay was in µs were applied as ns; the migration says so."""
    from django.apps import apps

    migration = importlib.import_module(
        "profiler_app.insights.migrations.0002_idle_delay_in_microseconds"
    )
    job = TrainingJob.objects.create(name="old-override")
    RuleOverrides.objects.create(
        job=job, params={"IdleTime_consecutive_kernel_delay": 50, "StepOutlier_stddev": 2}
    )
    migration.forwards(apps, None)
    params = RuleOverrides.objects.get(job=job).params
    assert params == {"IdleTime_consecutive_kernel_delay_us": 0.05, "StepOutlier_stddev": 2}
    migration.backwards(apps, None)
    params = RuleOverrides.objects.get(job=job).params
    assert params == {"IdleTime_consecutive_kernel_delay": 50, "StepOutlier_stddev": 2}
