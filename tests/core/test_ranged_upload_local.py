"""A resumable upload with profiles in the data directory: each range is appended to the
upload's file as it arrives, and completing it makes that very file the part's (a second name
for it, not a copy), whose sha256 is of the bytes sent."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from profiler_app.core.models import ProfilePart, TrainingJob, Upload
from tests.conftest import DATA_DIR
from tests.core.disk import upload_file
from tests.uploads import put_range, start_upload

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("parsed_by_hand")]

TRACE = DATA_DIR / "h100_cnn_kineto.json.gz"


@pytest.fixture
def job(user):
    return TrainingJob.objects.create(name="ranged-local", owner=user)


def test_ranges_land_appended_and_the_file_becomes_the_part(api, job, settings):
    raw = TRACE.read_bytes()
    url = start_upload(api, job, TRACE.name, len(raw))
    upload = Upload.objects.get()
    ends = [10_000, 50_000, 50_001, len(raw)]

    begin = 0
    for end in ends:
        assert put_range(api, url, raw, begin, end).json()["received_bytes"] == end
        assert upload_file(upload).read_bytes() == raw[:end]
        begin = end
    arrived = upload_file(upload).stat()
    done = api.post(f"{url}complete/")

    assert done.status_code == 202, done.content
    part = ProfilePart.objects.get(pk=done.json()["id"])
    assert part.sha256 == done.json()["sha256"] == hashlib.sha256(raw).hexdigest()
    assert part.size_bytes == len(raw)
    stored = Path(settings.MEDIA_ROOT) / part.file.name
    assert part.file.name == f"parts/{job.id}/{part.sha256}-{TRACE.name}"
    assert stored.read_bytes() == raw
    assert (stored.stat().st_ino, stored.stat().st_dev) == (arrived.st_ino, arrived.st_dev)
    assert stored.stat().st_nlink == 1  # the upload's own name went with its row
    assert not upload_file(upload).exists()
    assert not Upload.objects.exists()


def test_completing_content_the_job_has_keeps_one_file(api, job, settings):
    raw = TRACE.read_bytes()
    first, second = (start_upload(api, job, TRACE.name, len(raw)) for _ in range(2))
    for url in (first, second):
        assert put_range(api, url, raw).status_code == 200
    uploads = list(Upload.objects.all())

    stored = api.post(f"{first}complete/")
    again = api.post(f"{second}complete/")

    assert (stored.status_code, again.status_code) == (202, 200)
    assert again.json()["id"] == stored.json()["id"]
    raw_dir = Path(settings.MEDIA_ROOT) / "parts" / str(job.id)
    assert [p.name for p in raw_dir.iterdir()] == [Path(ProfilePart.objects.get().file.name).name]
    assert not [upload for upload in uploads if upload_file(upload).exists()]
