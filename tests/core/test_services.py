"""Against the real broker and a real Celery worker process."""

import time

import pytest

from profiler_app.core.models import PartState, ProfilePart, TrainingJob
from profiler_app.core.tasks import record_workers
from tests.conftest import DATA_DIR, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_reports_health_without_authentication(client_for):
    body = client_for(None).get("/api/health/").json()
    assert body == {"database": "ok", "redis": "ok", "workers": 0}  # none recorded yet


def test_it_answers_anonymous_health_from_the_recorded_worker_count(
    celery_worker_process, client_for, staff
):
    """Anonymous callers cost two pings, never a wait for the workers; staff ask them live."""
    anonymous = client_for(None)
    assert client_for(staff).get("/api/health/").json()["workers"] >= 1
    # Workers of other test runs on this Redis answer the broadcast too: compare with the
    # count recorded, not with 1.
    recorded = record_workers.apply().get()
    assert recorded >= 1
    started = time.monotonic()
    for _ in range(20):
        assert anonymous.get("/api/health/").json() == {
            "database": "ok",
            "redis": "ok",
            "workers": recorded,
        }
    assert time.monotonic() - started < 2  # a live ping alone waits 1 s


def test_it_processes_an_upload_in_a_real_worker(celery_worker_process, client_for, staff, user):
    from django.core.files.uploadedfile import SimpleUploadedFile

    assert client_for(staff).get("/api/health/").json()["workers"] >= 1
    api = client_for(user)
    job = TrainingJob.objects.create(name="worker-e2e", owner=user)
    trace = (DATA_DIR / "cpu_only_rank34.pt.trace.json.gz").read_bytes()
    response = api.post(
        f"/api/jobs/{job.id}/parts/",
        {
            "node": "algo-1",
            "rank": 34,
            "kind": "kineto",
            "file": SimpleUploadedFile("rank34.pt.trace.json.gz", trace),
        },
        format="multipart",
    )
    assert response.status_code == 202
    part_id = response.json()["id"]

    def finished():
        part = ProfilePart.objects.get(pk=part_id)
        return part if part.state in (PartState.DONE, PartState.FAILED) else None

    part = wait_for(finished, timeout=120)
    assert part.state == PartState.DONE, part.error
    assert part.started_at is not None and part.finished_at >= part.started_at
