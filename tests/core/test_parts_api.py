import gzip
import hashlib
import io
import os
import stat
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.utils import timezone

from profiler_app.core.models import Node, PartState, ProfilePart, TrainingJob, Upload
from tests.conftest import DATA_DIR
from tests.core.disk import upload_file
from tests.uploads import put_range, start_upload

pytestmark = pytest.mark.django_db

TRACE = DATA_DIR / "cpu_only_rank34.pt.trace.json.gz"


@pytest.fixture
def job(user):
    return TrainingJob.objects.create(name="cnn", owner=user)


def trace_upload(name="rank34.pt.trace.json.gz", content=None):
    return SimpleUploadedFile(name, content if content is not None else TRACE.read_bytes())


def post_part(client, job, **fields):
    data = {"node": "algo-1", "rank": 34, "kind": "kineto", "file": trace_upload()}
    data.update(fields)
    return client.post(f"/api/jobs/{job.id}/parts/", data, format="multipart")


def test_it_stores_an_uploaded_part_and_returns_202(api, job):
    response = post_part(api, job, pid=4242, hostname="gpu-host-7")
    assert response.status_code == 202, response.json()
    body = response.json()
    raw = TRACE.read_bytes()
    assert body["sha256"] == hashlib.sha256(raw).hexdigest()
    assert body["size_bytes"] == len(raw)
    assert body["node"] == "algo-1"
    assert body["rank"] == 34
    assert body["pid"] == 4242
    assert body["state"] == "pending"
    part = ProfilePart.objects.get(pk=body["id"])
    assert part.file.read() == raw
    assert Node.objects.get(job=job, name="algo-1").hostname == "gpu-host-7"


def test_it_is_idempotent_for_the_same_content(api, job):
    first = post_part(api, job)
    again = post_part(api, job, node="algo-2")
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert ProfilePart.objects.filter(job=job).count() == 1


def test_it_lists_parts_of_a_job_and_one_part(api, job):
    part_id = post_part(api, job).json()["id"]
    listed = api.get(f"/api/jobs/{job.id}/parts/").json()
    assert [p["id"] for p in listed["results"]] == [part_id]
    assert api.get(f"/api/parts/{part_id}/").json()["original_name"] == "rank34.pt.trace.json.gz"
    jobs = api.get("/api/jobs/").json()["results"]
    assert jobs[0]["parts_total"] == 1
    assert jobs[0]["size_bytes"] == TRACE.stat().st_size


def test_it_validates_part_fields(api, job):
    response = post_part(api, job, rank=-1, kind="pdf", node="../etc")
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {"rank", "kind", "node"}
    empty = post_part(api, job, file=trace_upload(content=b""))
    assert empty.status_code == 400
    assert "file" in empty.json()


def test_it_refuses_a_pid_beyond_32_bits(api, job):
    message = ["Ensure this value is less than or equal to 2147483647."]
    whole = post_part(api, job, pid=2**31)
    assert (whole.status_code, whole.json()) == (400, {"pid": message})
    ranged = api.post(
        f"/api/jobs/{job.id}/uploads/",
        {
            "node": "algo-1",
            "rank": 0,
            "kind": "kineto",
            "pid": 2**31,
            "filename": "t.json",
            "size_bytes": 3,
        },
        format="json",
    )
    assert (ranged.status_code, ranged.json()) == (400, {"pid": message})
    assert post_part(api, job, pid=2**31 - 1).status_code == 202


def test_it_refuses_files_over_the_limit_with_413(api, job, settings):
    settings.PROFILE_UPLOAD_MAX_BYTES = 1000
    response = post_part(api, job)
    assert response.status_code == 413
    assert "accepts profile files up to 1,000 bytes" in response.json()["detail"]
    assert response.json()["code"] == "too_large"
    assert ProfilePart.objects.count() == 0


def test_it_requires_authentication_for_parts(client_for, job):
    anonymous = client_for(None)
    assert post_part(anonymous, job).status_code == 401
    assert anonymous.get(f"/api/jobs/{job.id}/parts/").status_code == 401
    assert anonymous.get("/api/parts/1/").status_code == 401


def test_it_resumes_a_chunked_upload_and_stores_the_part(api, job):
    raw = gzip.compress(b'{"traceEvents": []}' + b" " * 5000)
    url = start_upload(api, job, "big.json.gz", len(raw), node="algo-2", rank=1)
    half = len(raw) // 2

    def put(begin, end):
        return put_range(api, url, raw, begin, end)

    assert put(0, half).json()["received_bytes"] == half
    # The client lost its connection: it asks where to resume.
    assert api.get(url).json()["received_bytes"] == half
    gap = put(half + 10, len(raw))
    assert gap.status_code == 409
    assert f"expected the range to start at byte {half}" in gap.json()["detail"]
    early = api.post(f"{url}complete/")
    assert early.status_code == 409
    assert put(half, len(raw)).json()["received_bytes"] == len(raw)
    done = api.post(f"{url}complete/")
    assert done.status_code == 202
    part = ProfilePart.objects.get(pk=done.json()["id"])
    assert part.sha256 == hashlib.sha256(raw).hexdigest()
    assert part.file.read() == raw
    assert part.node.name == "algo-2"
    assert not Upload.objects.exists()


def test_it_refuses_a_declared_size_over_the_limit(api, job, settings):
    settings.PROFILE_UPLOAD_MAX_BYTES = 5 * 1024**3
    response = api.post(
        f"/api/jobs/{job.id}/uploads/",
        {
            "node": "algo-1",
            "rank": 0,
            "kind": "kineto",
            "filename": "huge.json",
            "size_bytes": 6 * 1024**3,
        },
        format="json",
    )
    assert response.status_code == 413


def test_it_keeps_uploads_private_to_their_sender(api, client_for, teammate, job):
    start = api.post(
        f"/api/jobs/{job.id}/uploads/",
        {"node": "algo-1", "rank": 0, "kind": "kineto", "filename": "a.json", "size_bytes": 10},
        format="json",
    )
    other = client_for(teammate)
    assert other.get(f"/api/uploads/{start.json()['id']}/").status_code == 404


def test_it_reprocesses_a_failed_part(api, job):
    part_id = post_part(api, job).json()["id"]
    ProfilePart.objects.filter(pk=part_id).update(state=PartState.FAILED, error="boom")
    response = api.post(f"/api/parts/{part_id}/reprocess/")
    assert response.status_code == 202
    assert response.json()["state"] == "pending"
    assert response.json()["error"] == ""


def rates(settings, **scopes: str) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], **scopes},
    }


def test_it_throttles_reprocessing(api, job, settings):
    rates(settings, reprocess="3/hour")
    part_id = post_part(api, job).json()["id"]
    codes = [api.post(f"/api/parts/{part_id}/reprocess/").status_code for _ in range(4)]
    assert codes == [202, 202, 202, 429]


def test_it_keeps_raw_files_private(api, job):
    part = ProfilePart.objects.get(pk=post_part(api, job).json()["id"])
    path = Path(part.file.path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


class SlowStream(io.BytesIO):
    """A request body that arrives slowly, so that a second request overlaps it; ``reading``
    is set once its request is reading it (the upload's row locked by then)."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reading = threading.Event()

    def read(self, size=-1):
        self.reading.set()
        time.sleep(0.3)
        return super().read(size)


@pytest.mark.django_db(transaction=True)
def test_it_accepts_one_of_two_concurrent_sends_of_a_range(user, job):
    from profiler_app.core import logic

    upload = Upload.objects.create(
        job=job, owner=user, node_name="algo-1", kind="kineto", original_name="t.json", size_bytes=4
    )
    outcomes: dict[str, str] = {}

    def send(name: str, stream: io.BytesIO, after: threading.Event | None) -> None:
        if after is not None:
            assert after.wait(60)
        try:
            logic.append_to_upload(Upload.objects.get(pk=upload.pk), 0, stream, 4)
            outcomes[name] = "accepted"
        except logic.UploadRangeError as exc:
            outcomes[name] = str(exc)
        finally:
            connection.close()

    slow = SlowStream(b"AAAA")
    first = threading.Thread(target=send, args=("first", slow, None))
    # The retry arrives while the first holds the row and reads its body.
    retry = threading.Thread(target=send, args=("retry", io.BytesIO(b"BBBB"), slow.reading))
    for thread in (first, retry):
        thread.start()
    for thread in (first, retry):
        thread.join(120)
    assert outcomes == {
        "first": "accepted",
        "retry": "expected the range to start at byte 4, got 0",
    }
    assert upload_file(upload).read_bytes() == b"AAAA"
    assert Upload.objects.get(pk=upload.pk).received_bytes == 4


def test_it_removes_uploads_nobody_finished(api, job, settings):
    from profiler_app.core.tasks import remove_abandoned_uploads

    settings.UPLOAD_ABANDON_HOURS = 24
    day_ago = time.time() - 25 * 3600

    def started(name: str, sent: bytes) -> Upload:
        body = {"node": "algo-1", "rank": 0, "kind": "kineto", "filename": name, "size_bytes": 10}
        upload = Upload.objects.get(pk=api.post(f"/api/jobs/{job.id}/uploads/", body).json()["id"])
        upload_file(upload).parent.mkdir(parents=True, exist_ok=True)
        upload_file(upload).write_bytes(sent)
        return upload

    abandoned, slow, fresh = started("a", b"12"), started("s", b"34"), started("f", b"56")
    long_ago = timezone.now() - timedelta(hours=25)
    Upload.objects.filter(pk__in=[abandoned.pk, slow.pk]).update(created_at=long_ago)
    os.utime(upload_file(abandoned), (day_ago, day_ago))  # slow's bytes arrived just now
    orphan = upload_file(abandoned).with_name("0badc0de.part")
    orphan.write_bytes(b"left behind")
    os.utime(orphan, (day_ago, day_ago))

    assert remove_abandoned_uploads.apply().get() == 2
    assert set(Upload.objects.values_list("pk", flat=True)) == {slow.pk, fresh.pk}
    assert not upload_file(abandoned).exists() and not orphan.exists()
    assert upload_file(slow).read_bytes() == b"34" and upload_file(fresh).exists()


def test_it_downloads_the_raw_file(api, job):
    part_id = post_part(api, job).json()["id"]
    response = api.get(f"/api/parts/{part_id}/download/")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == TRACE.read_bytes()


@pytest.mark.parametrize(
    "filename", ["C:\\traces\\rank0.json", "..\\..\\etc\\passwd", "a/b.json", ".."]
)
def test_it_stores_a_ranged_upload_with_an_odd_file_name(api, job, filename):
    raw = b'{"traceEvents": []}'
    url = start_upload(api, job, filename, len(raw))
    upload = Upload.objects.get()
    sent = put_range(api, url, raw)
    assert sent.status_code == 200, sent.content
    done = api.post(f"{url}complete/")
    assert done.status_code == 202, done.content
    assert done["Content-Type"].startswith("application/json")
    part = ProfilePart.objects.get(pk=done.json()["id"])
    assert part.file.read() == raw
    assert "\\" not in part.file.name and ".." not in part.file.name
    assert not upload_file(upload).exists()


def test_it_cancels_an_upload_and_removes_its_bytes(api, client_for, teammate, job):
    raw = b'{"traceEvents": []}'
    url = start_upload(api, job, "t.json", len(raw))
    upload = Upload.objects.get()
    put_range(api, url, raw, 0, 5)
    assert upload_file(upload).read_bytes() == raw[:5]

    assert client_for(teammate).delete(url).status_code == 404  # not theirs to cancel
    assert api.delete(url).status_code == 204
    assert not Upload.objects.exists() and not upload_file(upload).exists()
    assert api.post(f"{url}complete/").status_code == 404
    assert api.delete(url).status_code == 404
    assert not ProfilePart.objects.exists()


def test_it_refuses_ranges_and_completion_of_a_cancelled_upload(user, job):
    from profiler_app.core import logic

    upload = Upload.objects.create(
        job=job, owner=user, node_name="algo-1", kind="kineto", original_name="t.json", size_bytes=4
    )
    logic.append_to_upload(upload, 0, io.BytesIO(b"AAAA"), 4)
    logic.abandon_upload(upload)  # while the sender still held the row in hand
    with pytest.raises(logic.UploadRangeError, match="the upload was cancelled"):
        logic.append_to_upload(upload, 4, io.BytesIO(b""), 0)
    with pytest.raises(logic.UploadRangeError, match="the upload was cancelled"):
        logic.complete_upload(upload)
    assert not ProfilePart.objects.exists()
