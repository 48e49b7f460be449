"""Jobs that end: a collector job still marked as being sent that has sent nothing for
``COLLECTOR_SILENCE_MINUTES`` is ended by the server (its process died without a final status),
saying why; its owner can end or reopen a job through the API."""

from datetime import timedelta

import pytest
from django.utils import timezone

from profiler_app.core import logic
from profiler_app.core.models import Node, ProfilePart, TrainingJob, Upload

pytestmark = pytest.mark.django_db

SILENCE_MIN = 30


@pytest.fixture(autouse=True)
def silence(settings):
    settings.COLLECTOR_SILENCE_MINUTES = SILENCE_MIN


def job_with_part(owner, name: str, kind: str, sent_min_ago: float, status="in_progress"):
    job = TrainingJob.objects.create(name=name, owner=owner, status=status)
    node = Node.objects.create(job=job, name="algo-1")
    part = ProfilePart.objects.create(
        job=job, node=node, rank=0, kind=kind, original_name=f"{name}.pcol", size_bytes=1,
        sha256=name,
    )  # fmt: skip
    sent_at = timezone.now() - timedelta(minutes=sent_min_ago)
    ProfilePart.objects.filter(pk=part.pk).update(created_at=sent_at)
    return job, sent_at


def test_it_ends_a_silent_collector_job_saying_why(user):
    job, sent_at = job_with_part(user, "killed", "collector", SILENCE_MIN + 1)
    assert logic.end_silent_jobs() == 1
    job.refresh_from_db()
    assert job.status == "stopped"
    assert job.ended_at == sent_at
    assert job.end_reason == (
        f"ended without a final status: nothing received for {SILENCE_MIN} min after "
        f"{sent_at:%Y-%m-%d %H:%M} UTC"
    )
    assert logic.end_silent_jobs() == 0  # once


def test_it_leaves_jobs_that_are_still_talking_or_ended_or_imported(user):
    recent, _ = job_with_part(user, "recent", "collector", SILENCE_MIN - 1)
    done, _ = job_with_part(user, "done", "collector", 600, status="completed")
    imported, _ = job_with_part(user, "imported", "kineto", 600)
    uploading, _ = job_with_part(user, "uploading", "collector", 600)
    Upload.objects.create(
        job=uploading,
        owner=user,
        node_name="algo-1",
        rank=0,
        kind="collector",
        original_name="big.pcol",
        size_bytes=10,
    )  # fmt: skip  (its last byte arrived just now)
    assert logic.end_silent_jobs() == 0
    statuses = TrainingJob.objects.order_by("name").values_list("name", "status")
    assert dict(statuses) == {
        "recent": "in_progress",
        "done": "completed",
        "imported": "in_progress",
        "uploading": "in_progress",
    }
    # Past the silence the job still sending ends too, the others not.
    later = timezone.now() + timedelta(minutes=SILENCE_MIN + 1)
    assert logic.end_silent_jobs(later) == 2
    ended = TrainingJob.objects.filter(status="stopped").values_list("name", flat=True)
    assert sorted(ended) == ["recent", "uploading"]


def test_the_owner_ends_and_reopens_a_job_through_the_api(user, api, client_for, teammate):
    job, _ = job_with_part(user, "killed", "collector", SILENCE_MIN + 1)
    logic.end_silent_jobs()
    reopened = api.patch(f"/api/jobs/{job.id}/", {"status": "in_progress"}, format="json")
    assert reopened.status_code == 200, reopened.content
    assert (reopened.json()["status"], reopened.json()["end_reason"]) == ("in_progress", "")
    assert reopened.json()["ended_at"] is None
    ended = api.patch(f"/api/jobs/{job.id}/", {"status": "stopped"}, format="json").json()
    assert ended["status"] == "stopped" and ended["end_reason"] == ""
    assert ended["ended_at"] is not None  # the owner's End: now
    refused = client_for(teammate).patch(
        f"/api/jobs/{job.id}/", {"status": "in_progress"}, format="json"
    )
    assert refused.status_code == 403
    assert TrainingJob.objects.get(pk=job.pk).status == "stopped"
