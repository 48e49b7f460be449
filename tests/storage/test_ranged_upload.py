"""A resumable upload with profiles in a bucket (moto's real S3 API on loopback, behind a proxy
that counts what each request puts): each range goes to the part's own object as a part of a
multipart upload as it arrives, and completing the upload has the bucket join them, so each
byte is put once; ranges under the bucket's 5 MiB part minimum wait until they fill a part."""

from __future__ import annotations

import hashlib
import io
import random
from urllib.parse import parse_qs, urlsplit

import pytest

from profiler_app.core import logic, resumable, storage
from profiler_app.core.models import ProfilePart, TrainingJob, Upload
from profiler_app.core.resumable import MIN_PART_BYTES
from profiler_app.lib import bucket_url
from tests.conftest import DATA_DIR
from tests.storage import s3
from tests.storage.counting_proxy import CountingProxy
from tests.storage.test_bucket_down import point_at
from tests.uploads import put_range, start_upload

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("in_bucket", "parsed_by_hand"),
]

MiB = 1024 * 1024
BROWSER_RANGE = 8 * MiB  # frontend/src/upload/resumable.ts CHUNK_BYTES
TRACE = DATA_DIR / "h100_cnn_kineto.json.gz"


@pytest.fixture
def job(user):
    return TrainingJob.objects.create(name="ranged", owner=user)


@pytest.fixture
def proxy(s3_endpoint, settings, monkeypatch):
    """This process reaches the bucket through a counting proxy."""
    counting = CountingProxy(s3_endpoint)
    point_at(counting.endpoint, settings, monkeypatch)
    yield counting
    counting.close()


def send_in_ranges(api, url: str, raw: bytes, size: int, stop: int | None = None) -> None:
    """Sends ``raw[:stop]`` (all of it by default) in ranges of ``size`` bytes."""
    stop = len(raw) if stop is None else stop
    for begin in range(0, stop, size):
        end = min(begin + size, stop)
        response = put_range(api, url, raw, begin, end)
        assert response.status_code == 200, response.content
        assert response.json()["received_bytes"] == end


def parts_under_way(s3_endpoint, bucket) -> list[list[int]]:
    """Each multipart upload under way in the bucket: its parts' sizes."""
    client = s3.client(s3_endpoint)
    found = []
    for upload in client.list_multipart_uploads(Bucket=bucket).get("Uploads", ()):
        listed = client.list_parts(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"])
        found.append([part["Size"] for part in listed.get("Parts", ())])
    return found


def object_bytes(s3_endpoint, bucket, key: str) -> bytes:
    return s3.client(s3_endpoint).get_object(Bucket=bucket, Key=key)["Body"].read()


def test_a_100_mb_upload_in_browser_ranges_puts_each_byte_to_the_bucket_once(
    api, job, proxy, s3_endpoint, bucket
):
    raw = random.Random(51).randbytes(100_000_000)
    url = start_upload(api, job, TRACE.name, len(raw))

    send_in_ranges(api, url, raw, BROWSER_RANGE)
    # Twelve ranges, each a part as it arrived: 11 of 8 MiB and the last, 7,725,312 bytes.
    assert parts_under_way(s3_endpoint, bucket) == [[BROWSER_RANGE] * 11 + [7_725_312]]
    assert s3.keys(s3_endpoint, bucket) == []  # nothing is an object yet
    done = api.post(f"{url}complete/")

    assert done.status_code == 202, done.content
    assert proxy.put_bytes() == len(raw)
    puts = [r for r in proxy.requests() if r.method == "PUT"]
    assert [parse_qs(urlsplit(r.target).query)["partNumber"] for r in puts] == [
        [str(n)] for n in range(1, 13)
    ]
    part = ProfilePart.objects.get(pk=done.json()["id"])
    assert part.sha256 == hashlib.sha256(raw).hexdigest() == done.json()["sha256"]
    assert part.size_bytes == len(raw)
    upload_id = url.rstrip("/").rsplit("/", 1)[1]
    assert part.file.name == f"parts/{job.id}/{upload_id}-{TRACE.name}"
    assert s3.keys(s3_endpoint, bucket) == [f"profiles/{part.file.name}"]
    assert object_bytes(s3_endpoint, bucket, f"profiles/{part.file.name}") == raw
    assert parts_under_way(s3_endpoint, bucket) == []
    assert not Upload.objects.exists()


def test_ranges_under_the_part_minimum_wait_until_they_fill_a_part(api, job, s3_endpoint, bucket):
    raw = random.Random(7).randbytes(6 * MiB + 123)
    url = start_upload(api, job, TRACE.name, len(raw))

    send_in_ranges(api, url, raw, 3 * MiB)  # 3 MiB waits; with the next, 6 MiB: a part
    assert parts_under_way(s3_endpoint, bucket) == [[6 * MiB, 123]]
    assert s3.keys(s3_endpoint, bucket, "profiles/uploads/") == []  # taken into the part
    done = api.post(f"{url}complete/")

    assert done.status_code == 202, done.content
    part = ProfilePart.objects.get(pk=done.json()["id"])
    assert part.sha256 == hashlib.sha256(raw).hexdigest()
    assert object_bytes(s3_endpoint, bucket, f"profiles/{part.file.name}") == raw
    assert s3.keys(s3_endpoint, bucket) == [f"profiles/{part.file.name}"]


def test_a_small_file_in_small_ranges_is_one_part(api, job, s3_endpoint, bucket):
    raw = TRACE.read_bytes()
    assert len(raw) < MIN_PART_BYTES
    url = start_upload(api, job, TRACE.name, len(raw))

    half = len(raw) // 2
    send_in_ranges(api, url, raw, 16 * 1024, stop=half)  # each waits
    waiting = s3.keys(s3_endpoint, bucket, "profiles/uploads/")
    assert len(waiting) == -(-half // (16 * 1024))
    assert parts_under_way(s3_endpoint, bucket) == []
    assert put_range(api, url, raw, half).status_code == 200  # the rest: with them, a part
    assert parts_under_way(s3_endpoint, bucket) == [[len(raw)]]
    done = api.post(f"{url}complete/")

    assert done.status_code == 202, done.content
    part = ProfilePart.objects.get(pk=done.json()["id"])
    assert part.sha256 == hashlib.sha256(raw).hexdigest()
    assert s3.keys(s3_endpoint, bucket) == [f"profiles/{part.file.name}"]
    assert object_bytes(s3_endpoint, bucket, f"profiles/{part.file.name}") == raw


def test_a_retried_range_replaces_its_part(api, job, s3_endpoint, bucket):
    """A try whose part went but whose row change was lost: the retry sends the same part
    number again, which replaces it."""
    raw = random.Random(3).randbytes(5 * MiB + 10)
    url = start_upload(api, job, TRACE.name, len(raw))
    upload = Upload.objects.get()
    resumable.write_range(Upload.objects.get(), 0, io.BytesIO(raw[: 5 * MiB]), 5 * MiB, "t.gz")
    # The row never heard of it (the request died before it saved): the client sends again.
    assert parts_under_way(s3_endpoint, bucket) == [[5 * MiB]]
    logic.append_to_upload(upload, 0, io.BytesIO(raw[: 5 * MiB]), 5 * MiB)
    assert Upload.objects.get().parts_sent == 1
    assert put_range(api, url, raw, 5 * MiB).status_code == 200
    assert api.post(f"{url}complete/").status_code == 202
    part = ProfilePart.objects.get()
    assert object_bytes(s3_endpoint, bucket, f"profiles/{part.file.name}") == raw


def test_a_cancelled_upload_leaves_no_part_nor_waiting_range(api, job, s3_endpoint, bucket):
    raw = random.Random(5).randbytes(5 * MiB + 64 * 1024)
    url = start_upload(api, job, TRACE.name, len(raw))
    assert put_range(api, url, raw, 0, 5 * MiB).status_code == 200  # a part
    assert put_range(api, url, raw, 5 * MiB, 5 * MiB + 1024).status_code == 200  # waits
    assert parts_under_way(s3_endpoint, bucket) == [[5 * MiB]]
    assert len(s3.keys(s3_endpoint, bucket, "profiles/uploads/")) == 1

    assert api.delete(url).status_code == 204

    assert parts_under_way(s3_endpoint, bucket) == []
    assert s3.keys(s3_endpoint, bucket) == []
    assert not Upload.objects.exists()


def test_content_the_job_has_leaves_no_second_object(api, job, s3_endpoint, bucket):
    raw = TRACE.read_bytes()
    first, second = (start_upload(api, job, TRACE.name, len(raw)) for _ in range(2))
    for url in (first, second):
        assert put_range(api, url, raw).status_code == 200

    stored = api.post(f"{first}complete/")
    again = api.post(f"{second}complete/")

    assert (stored.status_code, again.status_code) == (202, 200)
    assert again.json()["id"] == stored.json()["id"]
    part = ProfilePart.objects.get()
    assert s3.keys(s3_endpoint, bucket) == [f"profiles/{part.file.name}"]
    assert parts_under_way(s3_endpoint, bucket) == []


def test_the_sweep_removes_abandoned_uploads_parts_and_waiting_ranges(
    api, job, s3_endpoint, bucket, settings
):
    raw = random.Random(9).randbytes(5 * MiB + 64 * 1024)
    url = start_upload(api, job, TRACE.name, len(raw))
    assert put_range(api, url, raw, 0, 5 * MiB).status_code == 200  # a part
    assert put_range(api, url, raw, 5 * MiB, 5 * MiB + 1024).status_code == 200  # waits
    # Bytes of an upload whose row is gone (its removal failed): a part of its own.
    lost = Upload(job=job, owner=job.owner, kind="kineto", original_name="l", size_bytes=6 * MiB)
    resumable.write_range(lost, 0, io.BytesIO(raw[: 5 * MiB]), 5 * MiB, "lost.gz")
    assert sorted(map(len, parts_under_way(s3_endpoint, bucket))) == [1, 1]
    assert storage.disk_use().uploads_bytes == 5 * MiB + 1024 + 5 * MiB
    settings.UPLOAD_ABANDON_HOURS = 0  # every byte is older than now

    assert logic.remove_abandoned_uploads() == 2

    assert parts_under_way(s3_endpoint, bucket) == []
    assert s3.keys(s3_endpoint, bucket) == []
    assert not Upload.objects.exists()
    assert storage.disk_use().uploads_bytes == 0


def test_an_upload_whose_ranges_all_wait_completes_them_as_its_one_part(
    api, job, s3_endpoint, bucket
):
    """Ranges sent before ranges went to parts were all kept as objects of their own."""
    raw = TRACE.read_bytes()
    url = start_upload(api, job, TRACE.name, len(raw))
    upload = Upload.objects.get()
    client = s3.client(s3_endpoint)
    for begin in range(0, len(raw), 40_000):
        key = f"profiles/uploads/{upload.pk}/{begin:020d}"
        client.put_object(Bucket=bucket, Key=key, Body=raw[begin : begin + 40_000])
    Upload.objects.filter(pk=upload.pk).update(received_bytes=len(raw))

    done = api.post(f"{url}complete/")

    assert done.status_code == 202, done.content
    part = ProfilePart.objects.get()
    assert part.sha256 == hashlib.sha256(raw).hexdigest()
    assert s3.keys(s3_endpoint, bucket) == [f"profiles/{part.file.name}"]
    assert object_bytes(s3_endpoint, bucket, f"profiles/{part.file.name}") == raw


def test_a_join_slower_than_a_requests_wait_completes_the_upload_once(
    api, job, s3_endpoint, bucket, settings, monkeypatch
):
    # A request gives up after 0.5 s without its next byte; the join answers after 2 s. Tried
    # with that bound, the join timed out, and its second try met the first's half-done join.
    monkeypatch.setattr(bucket_url, "READ_TIMEOUT_S", 0.5)
    with s3.slow_join(s3_endpoint, held_s=2.0) as endpoint:
        point_at(endpoint, settings, monkeypatch)
        raw = random.Random(3).randbytes(MIN_PART_BYTES + 1000)
        url = start_upload(api, job, TRACE.name, len(raw))
        send_in_ranges(api, url, raw, MIN_PART_BYTES)
        done = api.post(f"{url}complete/")

    assert done.status_code == 202, done.content
    part = ProfilePart.objects.get(pk=done.json()["id"])
    assert object_bytes(s3_endpoint, bucket, f"profiles/{part.file.name}") == raw
    assert parts_under_way(s3_endpoint, bucket) == []
