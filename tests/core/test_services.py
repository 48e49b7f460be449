"""Against the real broker and a real Celery worker process."""

import pytest

from profiler_app.core.models import PartState, ProfilePart, TrainingJob
from tests.conftest import DATA_DIR, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_reports_health_without_authentication(client_for):
    body = client_for(None).get("/api/health/").json()
    assert body["database"] == "ok"
    assert body["redis"] == "ok"
    assert isinstance(body["workers"], int)


def test_it_processes_an_upload_in_a_real_worker(celery_worker_process, api, user):
    from django.core.files.uploadedfile import SimpleUploadedFile

    assert api.get("/api/health/").json()["workers"] >= 1
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
