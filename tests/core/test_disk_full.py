"""A full disk, on a real small filesystem (a tmpfs holding the data directory): an upload is
answered 507 with the reason in JSON and leaves no partial file, whatever step met the full
disk; the job and what was stored before stay; a parse that fills the disk says so."""

from __future__ import annotations

import errno
import hashlib
import os
import time
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest

from profiler_app.core.logic import remove_abandoned_uploads
from profiler_app.core.models import PartState, ProfilePart, TrainingJob, Upload
from profiler_app.ingest import logic as ingest
from profiler_app.ingest.failures import disk_full_message
from profiler_app.profiles import store_products
from profiler_app.profiles.models import PartSummary
from profiler_app.traces.store_layout import SQL_TOTALS, TIMELINE_INDEX
from tests.conftest import DATA_DIR
from tests.core.disk import SmallDisk
from tests.uploads import post_part, put_range, start_upload

pytestmark = pytest.mark.django_db

TRACE = DATA_DIR / "gpu_training_rank0.pt.trace.json.gz"  # 1.1 MB
SMALL_TRACE = DATA_DIR / "h100_cnn_kineto.json.gz"
DISK_FULL = {
    "detail": "The server's disk is full, so this could not be stored; nothing of it was kept. "
    "Free some space (or ask an administrator to), then send it again.",
    "code": "disk_full",
}


@pytest.fixture
def disk(tmp_path, settings):
    """The data directory on a 24 MiB filesystem of its own."""
    with SmallDisk(tmp_path / "disk", 24 * 2**20) as small:
        data = small.root / "data"
        settings.DATA_DIR = data
        settings.MEDIA_ROOT = str(data / "media")
        settings.FILE_UPLOAD_TEMP_DIR = str(data / "tmp")
        (data / "tmp").mkdir(parents=True)
        yield small


@pytest.fixture
def job(user):
    return TrainingJob.objects.create(name="full-disk", owner=user)


@pytest.mark.parametrize("spooled", [False, True], ids=["held in memory", "spooled to disk"])
def test_it_answers_507_to_an_upload_and_keeps_no_partial_file(api, job, disk, settings, spooled):
    if spooled:  # the request's file goes to the scratch folder while it arrives
        settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024
    stored = post_part(api, job, SMALL_TRACE)
    assert stored.status_code == 202
    before = disk.files()
    disk.fill(leave_bytes=256 * 1024)  # room for a quarter of the file

    response = post_part(api, job, TRACE)

    assert response.status_code == 507
    assert response["Content-Type"] == "application/json"
    assert response.json() == DISK_FULL
    assert disk.files() == before
    assert list(ProfilePart.objects.filter(job=job).values_list("id", flat=True)) == [
        stored.json()["id"]
    ]
    assert api.get(f"/api/jobs/{job.id}/").status_code == 200

    disk.free()
    again = post_part(api, job, TRACE)
    assert again.status_code == 202, again.json()
    with ProfilePart.objects.get(pk=again.json()["id"]).file.open("rb") as stored_file:
        assert hashlib.sha256(stored_file.read()).hexdigest() == again.json()["sha256"]


def test_it_answers_507_to_a_range_and_keeps_the_bytes_counted_before(api, job, disk):
    raw = TRACE.read_bytes()
    url = start_upload(api, job, TRACE.name, len(raw))
    half = len(raw) // 2
    disk.fill(leave_bytes=half + 128 * 1024)  # the first half fits, the second does not

    assert put_range(api, url, raw, 0, half).status_code == 200
    response = put_range(api, url, raw, half, len(raw))

    assert response.status_code == 507
    assert response.json() == DISK_FULL
    upload = Upload.objects.get()
    assert upload.received_bytes == half
    assert disk.files() == {f"data/uploads/{upload.pk}.part": half}

    disk.free()
    assert put_range(api, url, raw, half, len(raw)).json()["received_bytes"] == len(raw)


def test_it_answers_507_to_a_first_range_and_keeps_no_file(api, job, disk):
    raw = TRACE.read_bytes()
    url = start_upload(api, job, TRACE.name, len(raw))
    disk.fill(leave_bytes=128 * 1024)

    response = put_range(api, url, raw, 0, len(raw))

    assert response.status_code == 507
    assert response.json() == DISK_FULL
    assert Upload.objects.get().received_bytes == 0
    assert disk.files() == {}


def test_completing_an_upload_on_a_full_disk_needs_no_room(api, job, disk):
    """The upload's file becomes the part's as it lies (a second name, then its own goes):
    nothing is copied, so a full disk does not stop it."""
    raw = TRACE.read_bytes()
    url = start_upload(api, job, TRACE.name, len(raw))
    assert put_range(api, url, raw, 0, len(raw)).status_code == 200
    disk.fill(leave_bytes=64 * 1024)  # less than the file

    response = api.post(f"{url}complete/")

    assert response.status_code == 202, response.content
    part = ProfilePart.objects.get()
    assert part.sha256 == hashlib.sha256(raw).hexdigest()
    assert disk.files() == {f"data/media/{part.file.name}": len(raw)}
    assert not Upload.objects.exists()


@pytest.mark.usefixtures("parsed_by_hand")
def test_a_parse_that_fills_the_disk_fails_the_part_saying_so(api, job, disk):
    response = post_part(api, job, SMALL_TRACE)
    part_id = response.json()["id"]
    before = disk.files()
    disk.fill(leave_bytes=16 * 1024)  # less than the part's timeline store

    assert ingest.claim(part_id, "full-disk-task")
    assert not ingest.parse_claimed_part(part_id, "full-disk-task")

    part = ProfilePart.objects.get(pk=part_id)
    assert part.state == PartState.FAILED
    assert part.error == (
        "This part could not be parsed: the server's disk is full. Nothing of this part was "
        "changed; free some space (or ask an administrator to), then reprocess it."
    )
    assert disk.files() == before  # the raw file, and nothing of the parse
    assert not PartSummary.objects.filter(part_id=part_id).exists()

    disk.free()
    ProfilePart.objects.filter(pk=part_id).update(state=PartState.PENDING)
    assert ingest.claim(part_id, "with-room-task")
    assert ingest.parse_claimed_part(part_id, "with-room-task")


# Each step of a parse that writes to the data directory: the function the ingest calls, or the
# store's product. The disk fills as the step begins (a real tmpfs, nothing of the writes
# patched), leaving two pages: a step whose first write fits meets the full disk within its next.
WRITE_STEPS = {
    "the timeline store (Arrow)": "ingest_trace",
    "the timeline index (numpy)": TIMELINE_INDEX,
    "the SQL totals (DuckDB)": SQL_TOTALS,
}


def _patch_step(monkeypatch, step: str, wrap):
    """The step runs through ``wrap(run_step)``, until the returned call puts it back."""
    name = WRITE_STEPS[step]
    if name in store_products._products:
        product = store_products._products[name]
        monkeypatch.setitem(
            store_products._products, name, replace(product, build=wrap(product.build))
        )
        return lambda: monkeypatch.setitem(store_products._products, name, product)
    run_step = getattr(ingest, name)
    monkeypatch.setattr(ingest, name, wrap(run_step))
    return lambda: monkeypatch.setattr(ingest, name, run_step)


@pytest.mark.parametrize("step", WRITE_STEPS)
@pytest.mark.usefixtures("parsed_by_hand")
def test_a_parse_that_meets_a_full_disk_at_any_step_says_so(api, job, disk, monkeypatch, step):
    def on_a_full_disk(run_step):
        def run(*args, **kwargs):
            disk.fill(leave_bytes=8 * 1024)
            return run_step(*args, **kwargs)

        return run

    put_back = _patch_step(monkeypatch, step, on_a_full_disk)
    part_id = post_part(api, job, SMALL_TRACE).json()["id"]
    before = disk.files()

    assert ingest.claim(part_id, "full-disk-task")
    assert not ingest.parse_claimed_part(part_id, "full-disk-task")

    part = ProfilePart.objects.get(pk=part_id)
    assert (part.state, part.error) == (
        PartState.FAILED,
        "This part could not be parsed: the server's disk is full. Nothing of this part was "
        "changed; free some space (or ask an administrator to), then reprocess it.",
    )
    assert disk.files() == before
    put_back()
    disk.free()
    ProfilePart.objects.filter(pk=part_id).update(state=PartState.PENDING)
    assert ingest.claim(part_id, "with-room-task")
    assert ingest.parse_claimed_part(part_id, "with-room-task")


def test_it_says_whose_disk_is_full():
    database = psycopg.errors.DiskFull("could not extend file: No space left on device")

    assert disk_full_message(database) == (
        "This part could not be parsed: the database's disk is full. Nothing of this part was "
        "changed; free some space (or ask an administrator to), then reprocess it."
    )
    assert disk_full_message(OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))) == (
        "This part could not be parsed: the server's disk is full. Nothing of this part was "
        "changed; free some space (or ask an administrator to), then reprocess it."
    )
    assert disk_full_message(OSError(errno.EIO, os.strerror(errno.EIO))) is None


def test_a_raw_file_left_half_written_by_a_killed_process_goes_with_the_hourly_sweep(
    job, disk, settings
):
    folder = Path(settings.MEDIA_ROOT) / "parts" / str(job.id)
    folder.mkdir(parents=True)
    stale, fresh = folder / ".incoming-stale", folder / ".incoming-fresh"
    stale.write_bytes(b"x" * 1000)
    fresh.write_bytes(b"y" * 1000)  # a write going on now
    hours_ago = time.time() - (settings.UPLOAD_ABANDON_HOURS + 1) * 3600
    os.utime(stale, (hours_ago, hours_ago))

    assert remove_abandoned_uploads() == 1

    assert disk.files() == {f"data/media/parts/{job.id}/.incoming-fresh": 1000}
