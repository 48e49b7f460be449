"""A job's state as the catalog shows it: its status checked against its parts and uploads."""

import gzip
from datetime import timedelta

import pytest
from django.utils import timezone

from profiler_app.core.models import (
    JobStatus,
    Node,
    PartState,
    ProfilePart,
    TrainingJob,
    Upload,
)
from tests.core.disk import upload_file

pytestmark = pytest.mark.django_db

JOBS = "/api/jobs/"


def make_job(name, owner, status=JobStatus.COMPLETED, parts=(), **fields):
    job = TrainingJob.objects.create(name=name, owner=owner, status=status, **fields)
    node = Node.objects.create(job=job, name="algo-1")
    for i, state in enumerate(parts):
        ProfilePart.objects.create(
            job=job,
            node=node,
            rank=i,
            kind="kineto",
            original_name=f"rank{i}.json",
            size_bytes=100,
            sha256=f"{name}-{i}",
            state=state,
        )
    return job


def start_upload(api, job, sent: bytes, size: int, stalled=True) -> Upload:
    body = {"node": "algo-1", "rank": 9, "kind": "kineto", "filename": "r9.json.gz"}
    response = api.post(f"{JOBS}{job.id}/uploads/", {**body, "size_bytes": size}, format="json")
    upload = Upload.objects.get(pk=response.json()["id"])
    if sent:
        put = api.generic(
            "PUT",
            f"/api/uploads/{upload.pk}/",
            sent,
            content_type="application/octet-stream",
            HTTP_CONTENT_RANGE=f"bytes 0-{len(sent) - 1}/{size}",
        )
        assert put.status_code == 200, put.json()
    if stalled:
        long_ago = timezone.now() - timedelta(minutes=10)
        Upload.objects.filter(pk=upload.pk).update(last_byte_at=long_ago)
    upload.refresh_from_db()
    return upload


def row(api, job) -> dict:
    body = api.get(f"{JOBS}{job.id}/").json()
    keys = ["status", "state", "parts_total", "parts_failed", "uploads_interrupted"]
    keys += ["interrupted_received_bytes", "interrupted_size_bytes"]
    return {key: body[key] for key in keys}


def test_it_shows_a_job_whose_only_part_failed_as_failed(api, user):
    job = make_job("lone", user, parts=[PartState.FAILED])
    assert row(api, job) == {
        "status": "completed",
        "state": "failed",
        "parts_total": 1,
        "parts_failed": 1,
        "uploads_interrupted": 0,
        "interrupted_received_bytes": 0,
        "interrupted_size_bytes": 0,
    }


def test_it_shows_a_job_with_some_failed_parts_as_partial_with_counts(api, user):
    parts = [PartState.FAILED, PartState.FAILED, PartState.DONE, PartState.DONE, PartState.DONE]
    job = make_job("some", user, parts=parts)
    got = row(api, job)
    assert (got["state"], got["parts_failed"], got["parts_total"]) == ("partial", 2, 5)


def test_it_keeps_the_declared_status_when_every_part_is_whole(api, user):
    job = make_job("fine", user, parts=[PartState.DONE, PartState.DONE])
    stopped = make_job("halted", user, status=JobStatus.STOPPED, parts=[PartState.DONE])
    empty = make_job("empty", user, status=JobStatus.FAILED)
    assert row(api, job)["state"] == "completed"
    assert row(api, stopped)["state"] == "stopped"
    assert row(api, empty)["state"] == "failed"


def test_it_keeps_a_job_the_collector_still_sends_to_in_progress(api, user):
    job = make_job("live", user, status=JobStatus.IN_PROGRESS, parts=[PartState.FAILED])
    start_upload(api, job, b"12345", 10, stalled=False)
    assert row(api, job)["state"] == "in_progress"
    stopping = make_job("winding", user, status=JobStatus.STOPPING, parts=[PartState.FAILED])
    assert row(api, stopping)["state"] == "stopping"
    api.patch(f"{JOBS}{job.id}/", {"status": "failed"}, format="json")
    Upload.objects.filter(job=job).delete()
    assert row(api, job)["state"] == "failed"


def test_it_shows_an_upload_stopped_before_its_end_as_interrupted(api, user):
    job = make_job("cut", user, status=JobStatus.IN_PROGRESS, parts=[PartState.DONE])
    start_upload(api, job, b"123456", 10)
    start_upload(api, job, b"", 30)
    got = row(api, job)
    assert got["state"] == "interrupted"
    assert got["uploads_interrupted"] == 2
    assert got["interrupted_received_bytes"] == 6
    assert got["interrupted_size_bytes"] == 40


def test_it_finds_failed_and_partial_jobs_with_the_failed_filter(api, user):
    make_job("a-fine", user, parts=[PartState.DONE])
    make_job("b-lone", user, parts=[PartState.FAILED])
    make_job("c-some", user, parts=[PartState.FAILED, PartState.DONE])
    make_job("d-declared", user, status=JobStatus.FAILED)
    make_job("e-live", user, status=JobStatus.IN_PROGRESS, parts=[PartState.FAILED])
    cut = make_job("f-cut", user, status=JobStatus.IN_PROGRESS)
    start_upload(api, cut, b"12", 10)

    def found(query):
        response = api.get(f"{JOBS}?{query}&ordering=name")
        assert response.status_code == 200, response.json()
        return [job["name"] for job in response.json()["results"]]

    assert found("status=failed") == ["b-lone", "c-some", "d-declared"]
    assert found("status=partial") == ["c-some"]
    assert found("status=completed") == ["a-fine"]
    assert found("status=in_progress") == ["e-live"]
    assert found("status=interrupted") == ["f-cut"]
    assert found("status=failed&status=interrupted") == ["b-lone", "c-some", "d-declared", "f-cut"]
    assert api.get(f"{JOBS}?status=nonsense").status_code == 400


def test_it_finishes_an_interrupted_job_keeping_the_whole_uploads(api, user):
    job = make_job("finish", user, status=JobStatus.IN_PROGRESS)
    raw = gzip.compress(b'{"traceEvents": []}')
    whole = start_upload(api, job, raw, len(raw))
    cut = start_upload(api, job, b"123", 10)
    response = api.post(f"{JOBS}{job.id}/uploads/finish/")
    assert response.status_code == 200, response.json()
    assert response.json() == {"stored": 1, "dropped": 1}
    assert not Upload.objects.filter(job=job).exists()
    assert not upload_file(whole).exists() and not upload_file(cut).exists()
    part = ProfilePart.objects.get(job=job)
    assert part.file.read() == raw
    job.refresh_from_db()
    assert job.status == JobStatus.COMPLETED and job.ended_at is not None
    assert row(api, job)["uploads_interrupted"] == 0


def test_it_abandons_an_interrupted_job_deleting_what_arrived(api, user):
    job = make_job("give-up", user, status=JobStatus.IN_PROGRESS)
    cut = start_upload(api, job, b"1234", 10)
    assert upload_file(cut).exists()
    response = api.post(f"{JOBS}{job.id}/uploads/abandon/")
    assert response.json() == {"stored": 0, "dropped": 1}
    assert not Upload.objects.exists() and not upload_file(cut).exists()
    assert row(api, job)["state"] == "stopped"
    assert row(api, job)["uploads_interrupted"] == 0


def test_it_keeps_a_status_the_sender_set_when_finishing(api, user):
    job = make_job("set", user, status=JobStatus.FAILED)
    start_upload(api, job, b"1", 10)
    api.post(f"{JOBS}{job.id}/uploads/finish/")
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED


def test_it_lets_only_the_owner_finish_or_abandon(api, client_for, teammate, user):
    job = make_job("theirs", user, status=JobStatus.IN_PROGRESS)
    start_upload(api, job, b"12", 10)
    other = client_for(teammate)
    for action in ("finish", "abandon"):
        response = other.post(f"{JOBS}{job.id}/uploads/{action}/")
        assert response.status_code == 403
        assert response.json()["code"] == "not_owner"
    assert Upload.objects.filter(job=job).count() == 1
    assert row(other, job)["state"] == "interrupted"
