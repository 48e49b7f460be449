"""Who may write what: every signed-in user reads every job; only its owner or staff change it.

The matrix below covers every operation of the API that writes a job, its parts or its
insights; the first test checks, from the schema the server generates now, that every other
writing operation is listed with the reason it is not one of those, so a new endpoint cannot be
forgotten.
"""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from drf_spectacular.generators import SchemaGenerator

from profiler_app.core import logic
from profiler_app.core.models import PartState, ProfilePart, TrainingJob, Upload
from profiler_app.insights.models import RuleOverrides
from tests.conftest import DATA_DIR

pytestmark = pytest.mark.django_db

TRACE = DATA_DIR / "cpu_only_rank34.pt.trace.json.gz"
SOURCE = {"node": "algo-1", "rank": 0, "kind": "kineto"}
NOT_YOURS = {"detail": "Only the job's owner or a staff member can change it.", "code": "not_owner"}


def stored_part(job: TrainingJob) -> ProfilePart:
    source = logic.PartSource(node_name="algo-1", rank=0, kind="kineto", original_name="r0.json")
    with TRACE.open("rb") as stream:
        part, _ = logic.store_part(job, source, stream)
    ProfilePart.objects.filter(pk=part.pk).update(state=PartState.FAILED, error="boom")
    return part


# (method, path as the schema names it) -> (send it for a job, the owner's success code)
JOB_WRITES = {
    ("PATCH", "/api/jobs/{id}/"): (
        lambda c, job: c.patch(f"/api/jobs/{job.id}/", {"notes": "tuned"}, format="json"),
        200,
    ),
    ("DELETE", "/api/jobs/{id}/"): (lambda c, job: c.delete(f"/api/jobs/{job.id}/"), 204),
    ("POST", "/api/jobs/{id}/parts/"): (
        lambda c, job: c.post(
            f"/api/jobs/{job.id}/parts/",
            {**SOURCE, "file": SimpleUploadedFile("r1.json.gz", TRACE.read_bytes() + b"\n")},
            format="multipart",
        ),
        202,
    ),
    ("POST", "/api/jobs/{id}/uploads/"): (
        lambda c, job: c.post(
            f"/api/jobs/{job.id}/uploads/",
            {**SOURCE, "filename": "r2.json", "size_bytes": 10},
            format="json",
        ),
        201,
    ),
    ("POST", "/api/jobs/{id}/uploads/finish/"): (
        lambda c, job: c.post(f"/api/jobs/{job.id}/uploads/finish/"),
        200,
    ),
    ("POST", "/api/jobs/{id}/uploads/abandon/"): (
        lambda c, job: c.post(f"/api/jobs/{job.id}/uploads/abandon/"),
        200,
    ),
    ("POST", "/api/parts/{id}/reprocess/"): (
        lambda c, job: c.post(f"/api/parts/{stored_part(job).id}/reprocess/"),
        202,
    ),
    ("PUT", "/api/jobs/{job_id}/series/"): (
        lambda c, job: c.put(f"/api/jobs/{job.id}/series/", {"series": "mine"}, format="json"),
        200,
    ),
    ("PUT", "/api/jobs/{job_id}/insights/parameters/"): (
        lambda c, job: c.put(
            f"/api/jobs/{job.id}/insights/parameters/", {"StepOutlier_stddev": 2}, format="json"
        ),
        200,
    ),
}

# Writing operations that write no job of someone else, and where that is tested.
OTHER_WRITES = {
    ("POST", "/api/auth/login/"): "signs the caller in",
    ("POST", "/api/auth/logout/"): "signs the caller out",
    ("POST", "/api/jobs/"): "creates a job the caller owns (test_jobs_api)",
    ("POST", "/api/demo/"): "creates a demo job the caller owns (test_demo_api)",
    ("PUT", "/api/loaded-profile/"): "the caller's own loaded profile (test_profile_and_settings)",
    ("DELETE", "/api/loaded-profile/"): "the caller's own loaded profile",
    ("POST", "/api/histograms/"): "the caller's own dashboard histograms (test_dashboard_api)",
    ("DELETE", "/api/histograms/{id}/"): "the caller's own dashboard histograms",
    ("PUT", "/api/settings/"): "staff only (test_profile_and_settings_api)",
    ("PUT", "/api/uploads/{id}/"): "the sender's own upload, begun on a job they may change",
    ("POST", "/api/uploads/{id}/complete/"): "the sender's own upload, as above",
    ("DELETE", "/api/uploads/{id}/"): "cancels the sender's own upload (test_parts_api)",
    ("POST", "/api/tokens/"): "creates a token of the caller's own (tests/accounts)",
    ("DELETE", "/api/tokens/{id}/"): "revokes the caller's own token; others' are 404",
    ("POST", "/api/jobs/{job_id}/sql/"): "a read-only query; every teammate reads (tests/sql)",
    ("POST", "/api/jobs/{job_id}/verdict/check/"): "judges a run, storing nothing (tests/history)",
    ("PATCH", "/api/series/{id}/"): "the series' owner or staff (tests/history/test_api)",
}


def test_the_matrix_covers_every_operation_that_writes():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    writes = {
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method in operations
        if method in ("post", "put", "patch", "delete")
    }
    assert writes == set(JOB_WRITES) | set(OTHER_WRITES)
    assert not set(JOB_WRITES) & set(OTHER_WRITES)


def snapshot(job: TrainingJob) -> tuple:
    """What a refused request must leave as it was."""
    row = TrainingJob.objects.filter(pk=job.pk).values().first()
    parts = sorted(ProfilePart.objects.filter(job=job).values_list("pk", "state", "error"))
    uploads = Upload.objects.filter(job=job).count()
    overrides = list(RuleOverrides.objects.filter(job=job).values_list("params", flat=True))
    return row, parts, uploads, overrides


@pytest.fixture
def job(user):
    job = TrainingJob.objects.create(name="alice-run", owner=user)
    stored_part(job)  # a part for the reprocess row (created once, before the request)
    return job


@pytest.mark.parametrize("operation", sorted(JOB_WRITES), ids=" ".join)
def test_a_teammate_gets_403_and_changes_nothing(operation, job, teammate, client_for):
    send, _ = JOB_WRITES[operation]
    before = snapshot(job)
    refused = send(client_for(teammate), job)
    assert (refused.status_code, refused.json()) == (403, NOT_YOURS)
    assert snapshot(job) == before


@pytest.mark.parametrize("operation", sorted(JOB_WRITES), ids=" ".join)
@pytest.mark.parametrize("who", ["owner", "staff"])
def test_the_owner_and_staff_may(operation, who, job, user, staff, client_for):
    send, success = JOB_WRITES[operation]
    response = send(client_for(user if who == "owner" else staff), job)
    assert response.status_code == success, response.content


@pytest.mark.parametrize("operation", sorted(JOB_WRITES), ids=" ".join)
def test_anonymous_callers_get_401(operation, job, client_for):
    send, _ = JOB_WRITES[operation]
    before = snapshot(job)
    assert send(client_for(None), job).status_code == 401
    assert snapshot(job) == before


def test_a_job_without_an_owner_is_changed_by_staff_only(teammate, staff, client_for):
    """Its owner's account was deleted, or it predates owners."""
    job = TrainingJob.objects.create(name="orphan")
    refused = client_for(teammate).patch(f"/api/jobs/{job.id}/", {"notes": "x"}, format="json")
    assert (refused.status_code, refused.json()) == (403, NOT_YOURS)
    changed = client_for(staff).patch(f"/api/jobs/{job.id}/", {"notes": "x"}, format="json")
    assert changed.status_code == 200


def test_a_teammate_still_reads_everything(job, teammate, client_for):
    reader = client_for(teammate)
    part = job.parts.get()
    for path in (
        f"/api/jobs/{job.id}/",
        f"/api/jobs/{job.id}/parts/",
        f"/api/parts/{part.id}/",
        f"/api/parts/{part.id}/download/",
        f"/api/jobs/{job.id}/insights/parameters/",
    ):
        assert reader.get(path).status_code == 200, path


def test_uploads_continue_only_on_a_job_their_sender_may_change(job, user, client_for):
    """An upload begun while its sender could change the job (as staff, say) stops once they
    cannot: each range and the completion is a write to the job."""
    start = client_for(user).post(
        f"/api/jobs/{job.id}/uploads/", {**SOURCE, "filename": "a", "size_bytes": 3}, format="json"
    )
    TrainingJob.objects.filter(pk=job.pk).update(owner=None)
    upload = f"/api/uploads/{start.json()['id']}/"
    sent = client_for(user).generic(
        "PUT",
        upload,
        b"abc",
        content_type="application/octet-stream",
        HTTP_CONTENT_RANGE="bytes 0-2/3",
    )
    assert (sent.status_code, sent.json()) == (403, NOT_YOURS)
    done = client_for(user).post(f"{upload}complete/")
    assert (done.status_code, done.json()) == (403, NOT_YOURS)
