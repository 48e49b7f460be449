"""Deleting a job (the API, the admin, one or many) gives its disk space back: raw files,
unfinished uploads and timeline stores, measured under the data directory; a parse running
meanwhile ends quietly and leaves nothing behind."""

import logging
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from profiler_app.core import logic, storage
from profiler_app.core.models import (
    LoadedProfile,
    Node,
    PartKind,
    PartState,
    ProfilePart,
    TrainingJob,
    Upload,
)
from profiler_app.ingest import logic as ingest_logic
from profiler_app.ingest.models import IngestRun
from profiler_app.ingest.tasks import ingest_part
from profiler_app.profiles import store_products
from profiler_app.profiles.models import KernelStat, PartSummary
from tests.conftest import DATA_DIR, wait_for
from tests.core.disk import data_bytes, data_files, insights_settled, upload_file

pytestmark = pytest.mark.django_db(transaction=True)

TRACES = ["cpu_only_rank34.pt.trace.json.gz", "amd_mi250_small.json.gz"]


def upload(client, job, name: str, rank: int = 0):
    response = client.post(
        f"/api/jobs/{job.id}/parts/",
        {
            "node": "algo-1",
            "rank": rank,
            "kind": "kineto",
            "file": SimpleUploadedFile(name, (DATA_DIR / name).read_bytes()),
        },
        format="multipart",
    )
    assert response.status_code == 202, response.content
    return response.json()["id"]


def parsed(job) -> None:
    def done():
        states = set(ProfilePart.objects.filter(job=job).values_list("state", flat=True))
        return states == {PartState.DONE}

    wait_for(done, timeout=120)
    wait_for(lambda: insights_settled(job.id), timeout=300)


def parsed_job(client, owner, name: str, traces=TRACES) -> TrainingJob:
    job = TrainingJob.objects.create(name=name, owner=owner)
    for rank, trace in enumerate(traces):
        upload(client, job, trace, rank)
    parsed(job)
    return job


def gone_from_disk(job_id: int) -> bool:
    return not storage.raw_dir(job_id).exists() and not storage.stores_dir(job_id).exists()


def test_deleting_a_job_gives_back_its_disk_space(celery_worker_process, user, client_for):
    owner = client_for(user)
    before = data_files()
    job = parsed_job(owner, user, "to-delete")
    # A resumable upload half sent, and the job loaded: both go with it.
    start = owner.post(
        f"/api/jobs/{job.id}/uploads/",
        {"node": "algo-2", "rank": 2, "kind": "kineto", "filename": "big.json", "size_bytes": 8},
        format="json",
    )
    owner.generic(
        "PUT",
        f"/api/uploads/{start.json()['id']}/",
        b"half",
        content_type="application/octet-stream",
        HTTP_CONTENT_RANGE="bytes 0-3/8",
    )
    temp = upload_file(Upload.objects.get())
    assert temp.read_bytes() == b"half"
    owner.put("/api/loaded-profile/", {"job": job.id}, format="json")

    after_parse = data_files()
    raw = sum(size for name, size in after_parse.items() if name.startswith(f"parts/{job.id}/"))
    stores = sum(
        size for name, size in after_parse.items() if name.startswith(f"timeline/{job.id}/")
    )
    raw_sizes = sorted(ProfilePart.objects.filter(job=job).values_list("size_bytes", flat=True))
    assert raw == sum(raw_sizes) and stores > 0
    assert data_bytes() == sum(before.values()) + raw + stores

    assert owner.delete(f"/api/jobs/{job.id}/").status_code == 204

    assert data_files() == before
    assert gone_from_disk(job.id) and not temp.exists()
    assert not ProfilePart.objects.exists() and not Upload.objects.exists()
    assert not PartSummary.objects.exists() and not KernelStat.objects.exists()
    assert not LoadedProfile.objects.exists()


def test_deleting_through_the_admin_gives_back_the_disk_space_too(
    celery_worker_process, user, django_user_model, client_for
):
    owner = client_for(user)
    before = data_files()
    one, two, three = (
        parsed_job(owner, user, name, traces=[trace])
        for name, trace in [("one", TRACES[0]), ("two", TRACES[1]), ("three", TRACES[0])]
    )
    assert data_bytes() > sum(before.values())
    admin = Client()
    admin.force_login(django_user_model.objects.create_superuser("root", password="root-pass-1"))

    single = admin.post(f"/admin/core/trainingjob/{one.id}/delete/", {"post": "yes"})
    assert single.status_code == 302
    assert gone_from_disk(one.id) and not gone_from_disk(two.id)
    bulk = admin.post(
        "/admin/core/trainingjob/",
        {"action": "delete_selected", "_selected_action": [two.id, three.id], "post": "yes"},
    )
    assert bulk.status_code == 302
    assert not TrainingJob.objects.exists()
    assert data_files() == before
    assert all(gone_from_disk(job.id) for job in (one, two, three))


def test_deleting_a_part_through_the_admin_removes_its_store(
    celery_worker_process, user, django_user_model, client_for
):
    owner = client_for(user)
    job = parsed_job(owner, user, "two-parts")
    first, second = job.parts.order_by("id")
    first_store = storage.stores_dir(first.job_id) / str(first.pk)
    assert first_store.is_dir() and first.file.path
    admin = Client()
    admin.force_login(django_user_model.objects.create_superuser("root", password="root-pass-1"))
    response = admin.post(f"/admin/core/profilepart/{first.id}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not first_store.exists() and not storage.file_bytes(
        storage.media_root() / first.file.name
    )
    assert (storage.stores_dir(second.job_id) / str(second.pk)).is_dir()
    assert storage.file_bytes(storage.media_root() / second.file.name) == second.size_bytes


def stored_part(job: TrainingJob, trace: str = TRACES[0]) -> ProfilePart:
    """A part with its raw file, not queued (the test parses it in its own process)."""
    node, _ = Node.objects.get_or_create(job=job, name="algo-1")
    part = ProfilePart(
        job=job,
        node=node,
        kind=PartKind.KINETO,
        original_name=trace,
        size_bytes=(DATA_DIR / trace).stat().st_size,
        sha256=f"{job.pk:064d}",
    )
    with (DATA_DIR / trace).open("rb") as stream:
        part.file.save(trace, stream, save=False)
    part.save()
    return part


@pytest.fixture
def quiet(caplog):
    """Fails the test if anything logged an error (a traceback for the admins)."""
    caplog.set_level(logging.INFO)
    yield caplog
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []


def test_a_parse_whose_job_is_deleted_before_it_stores_ends_quietly(user, quiet, monkeypatch):
    before = data_files()
    job = TrainingJob.objects.create(name="deleted-at-store", owner=user)
    part = stored_part(job)

    def delete_the_job(store_dir):
        build_products(store_dir)
        assert store_dir.is_dir()  # the parse wrote its store: the deletion takes it away
        logic.delete_job(TrainingJob.objects.get(pk=job.pk))

    build_products = store_products.build_products
    monkeypatch.setattr(ingest_logic, "build_products", delete_the_job)
    result = ingest_part.apply(args=[part.pk])
    assert result.successful()
    assert not TrainingJob.objects.exists() and not ProfilePart.objects.exists()
    assert data_files() == before
    assert gone_from_disk(job.pk)


def test_a_parse_whose_job_is_deleted_while_it_reads_ends_quietly(user, quiet, monkeypatch):
    """The deletion takes the store folder from under the parse, which then fails to write."""
    before = data_files()
    job = TrainingJob.objects.create(name="deleted-mid-parse", owner=user)
    part = stored_part(job)
    writer = ingest_logic._progress_writer

    def delete_on_first_progress(*args):
        write = writer(*args)

        def progress(fraction):
            if TrainingJob.objects.filter(pk=job.pk).exists():
                logic.delete_job(TrainingJob.objects.get(pk=job.pk))
            write(fraction)

        return progress

    monkeypatch.setattr(ingest_logic, "_progress_writer", delete_on_first_progress)
    result = ingest_part.apply(args=[part.pk])
    assert result.successful()
    assert not TrainingJob.objects.exists()
    assert data_files() == before
    assert gone_from_disk(job.pk)


def test_a_part_deleted_after_its_claim_is_not_parsed(user, quiet):
    job = TrainingJob.objects.create(name="deleted-after-claim", owner=user)
    part = stored_part(job)
    assert ingest_logic.claim(part.pk, "task-1")
    logic.delete_job(job)
    assert ingest_logic.parse_claimed_part(part.pk, "task-1") is False
    assert not ingest_logic.claim(part.pk, "task-2")
    assert gone_from_disk(job.pk)


def test_the_worker_survives_a_deletion_during_a_parse(celery_worker_process, user, client_for):
    owner = client_for(user)
    before = data_files()
    job = TrainingJob.objects.create(name="deleted-under-the-worker", owner=user)
    log_start = len(celery_worker_process.log_path.read_text())
    part_id = upload(owner, job, "resnet50_pt18_workers4.pt.trace.json.gz")

    def claimed():
        return IngestRun.objects.filter(part_id=part_id, part__state=PartState.PROCESSING).first()

    run = wait_for(claimed, timeout=60, interval=0.02)
    assert owner.delete(f"/api/jobs/{job.id}/").status_code == 204

    finished = re.compile(rf"ingest_part\[{re.escape(run.task_id)}\] (succeeded|raised)")

    def task_ended():
        return finished.search(celery_worker_process.log_path.read_text()[log_start:])

    assert wait_for(task_ended, timeout=120).group(1) == "succeeded"
    assert data_files() == before
    assert gone_from_disk(job.id)
    log = celery_worker_process.log_path.read_text()[log_start:]
    assert "Traceback" not in log and "ERROR" not in log, log
    assert celery_worker_process.poll() is None
    # And it parses the next upload as ever.
    after = TrainingJob.objects.create(name="after-the-deletion", owner=user)
    upload(owner, after, TRACES[0])
    parsed(after)
