"""Insights in each viewer's window, computed by a real worker on a real A100 trace: a
teammate who reads the job in the whole trace gets his own run, the owner's complete steps stay
hers, and whatever changes the figures recomputes both. Expected figures come from the trace's
raw JSON (``tests.cluster.raw``)."""

import pytest
from django.core.management import call_command

from profiler_app.core.models import PartState, TrainingJob
from profiler_app.insights.models import InsightsStatus, JobInsights
from profiler_app.traces.window import COMPLETE_STEPS, WHOLE_TRACE
from tests.cluster import raw
from tests.conftest import DATA_DIR, wait_for
from tests.ingest.helpers import upload, wait_parsed

TRACE = "gpu_training_rank0.pt.trace.json.gz"

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def settled(job, window: str, after_generation: int = 0) -> JobInsights:
    def done():
        row = JobInsights.objects.filter(
            job=job, window=window, generation__gt=after_generation
        ).first()
        finished = row and row.status in (InsightsStatus.DONE, InsightsStatus.FAILED)
        return row if finished else None

    row = wait_for(done, timeout=120, interval=0.3)
    assert row.status == InsightsStatus.DONE, row.error
    return row


def outlier_points(row: JobInsights) -> int:
    return next(r for r in row.report["rules"] if r["rule"] == "StepOutlier")["datapoints"]


@pytest.fixture
def owners_job(api, user, celery_worker_process):
    job = TrainingJob.objects.create(name="a100-windows", owner=user, window=COMPLETE_STEPS)
    [part] = wait_parsed(upload(api, job, DATA_DIR / TRACE)["id"])
    assert part.state == PartState.DONE, part.error
    settled(job, COMPLETE_STEPS)
    return job


def test_it_computes_a_teammates_insights_in_his_window(owners_job, teammate, client_for):
    job = owners_job
    steps = raw.step_times(TRACE)
    assert len(steps) >= 2 and len(raw.step_times(TRACE, True)) == len(steps) - 1
    owners = JobInsights.objects.get(job=job)
    bob = client_for(teammate)
    bob.patch(f"/api/jobs/{job.id}/", {"window": WHOLE_TRACE}, format="json")

    first = bob.get(f"/api/jobs/{job.id}/insights/").json()
    assert first["status"] in ("queued", "running") and first["report"] is None
    bobs = settled(job, WHOLE_TRACE)

    body = bob.get(f"/api/jobs/{job.id}/insights/").json()
    assert body["status"] == "done" and body["window"]["window"] == WHOLE_TRACE
    rules = {r["rule"]: r for r in body["report"]["rules"]}
    assert rules["StepOutlier"]["datapoints"] == len(steps)  # the cut-short step included
    assert outlier_points(owners) == len(steps) - 1
    analyses = bob.get(f"/api/jobs/{job.id}/analyses/").json()
    assert analyses["window"]["window"] == WHOLE_TRACE
    assert analyses["totals"]["kernel_ns"] == raw.gpu_times(TRACE)["kernel_ns"]
    dashboard = bob.get(f"/api/jobs/{job.id}/dashboard/").json()
    assert analyses["totals"]["kernel_ns"] == dashboard["totals"]["kernel_ns"]
    assert raw.gpu_times(TRACE)["kernel_ns"] != raw.gpu_times(TRACE, True)["kernel_ns"]
    page = bob.get(f"/api/jobs/{job.id}/insights/report.html")
    assert page.status_code == 200 and b"whole trace" in page.content

    # The owner's are hers, unchanged.
    assert JobInsights.objects.get(pk=owners.pk).computed_at == owners.computed_at
    mine = client_for(job.owner).get(f"/api/jobs/{job.id}/analyses/").json()
    assert mine["window"]["window"] == COMPLETE_STEPS
    assert mine["totals"]["kernel_ns"] == raw.gpu_times(TRACE, True)["kernel_ns"]
    assert bobs.pk != owners.pk


def test_a_reparse_or_an_override_recomputes_every_window(owners_job, teammate, client_for):
    job = owners_job
    bob = client_for(teammate)
    bob.patch(f"/api/jobs/{job.id}/", {"window": WHOLE_TRACE}, format="json")
    bob.get(f"/api/jobs/{job.id}/insights/")
    settled(job, WHOLE_TRACE)

    def generations() -> dict[str, int]:
        return dict(JobInsights.objects.filter(job=job).values_list("window", "generation"))

    before = generations()
    call_command("reprocess", "--job", str(job.id))
    for window in (WHOLE_TRACE, COMPLETE_STEPS):
        settled(job, window, after_generation=before[window])

    before = generations()
    put = client_for(job.owner).put(
        f"/api/jobs/{job.id}/insights/parameters/", {"StepOutlier_stddev": 1}, format="json"
    )
    assert put.status_code == 200
    for window in (WHOLE_TRACE, COMPLETE_STEPS):
        row = settled(job, window, after_generation=before[window])
        outlier = next(r for r in row.report["rules"] if r["rule"] == "StepOutlier")
        assert outlier["params"]["stddev"] == 1
