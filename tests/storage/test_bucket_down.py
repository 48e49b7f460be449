"""A bucket out of reach (nothing listens) or stalled (it takes connections and never answers):
uploads are answered 503 with the reason in JSON, within the client's bounded timeouts, and
keep nothing; a parse waits for the bucket a bounded time, then fails saying so, or goes on
when the bucket is back meanwhile."""

from __future__ import annotations

import http.server
import socket
import threading
import time

import pytest

from profiler_app.core.bucket import bucket as storage_bucket
from profiler_app.core.models import PartState, ProfilePart, TrainingJob, Upload
from profiler_app.ingest import logic as ingest
from profiler_app.lib.bucket_url import ATTEMPTS, READ_TIMEOUT_S, django_storage_options
from tests.conftest import DATA_DIR
from tests.core.disk import data_files
from tests.storage import s3
from tests.uploads import post_part, put_range, start_upload

pytestmark = pytest.mark.django_db(transaction=True)

TRACE = DATA_DIR / "h100_cnn_kineto.json.gz"


@pytest.fixture
def job(user):
    return TrainingJob.objects.create(name="bucket-down", owner=user)


def point_at(endpoint: str, settings, monkeypatch) -> None:
    """This process's requests to the bucket (django-storages' too) go to ``endpoint``."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": django_storage_options(settings.STORAGE_URL),
        },
    }


class StalledBucket:
    """A bucket that takes connections (the kernel's backlog does) and never answers a byte;
    it counts the tries (a client gives a timed-out connection up and makes a new one for its
    next try)."""

    def __init__(self) -> None:
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.endpoint = f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def tries(self) -> int:
        """The connections the client made, each waiting in the backlog; call once it is done."""
        self._listener.setblocking(False)
        count = 0
        while True:
            try:
                self._listener.accept()[0].close()
            except BlockingIOError:
                return count
            count += 1

    def __enter__(self) -> StalledBucket:
        return self

    def __exit__(self, *exc_info) -> None:
        self._listener.close()


def assert_unavailable(response, doing: str) -> None:
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["code"] == "storage_unavailable"
    assert body["detail"].startswith(f"The object store could not {doing}"), body["detail"]


@pytest.mark.usefixtures("in_bucket")
def test_uploads_to_a_bucket_out_of_reach_answer_503_and_keep_nothing(
    api, job, settings, monkeypatch, s3_endpoint, bucket
):
    raw = TRACE.read_bytes()
    url = start_upload(api, job, TRACE.name, len(raw))
    before = data_files()
    point_at(f"http://127.0.0.1:{s3.free_port()}", settings, monkeypatch)  # nobody there

    assert_unavailable(post_part(api, job, TRACE), "store or read a raw upload (Could not connect")
    assert_unavailable(put_range(api, url, raw), f"start parts/{job.id}/")

    assert not ProfilePart.objects.exists()
    assert Upload.objects.get().received_bytes == 0
    assert data_files() == before
    assert s3.keys(s3_endpoint, bucket) == []
    assert api.get(f"/api/jobs/{job.id}/").status_code == 200

    point_at(s3_endpoint, settings, monkeypatch)  # back
    assert put_range(api, url, raw).status_code == 200
    point_at(f"http://127.0.0.1:{s3.free_port()}", settings, monkeypatch)
    assert_unavailable(api.post(f"{url}complete/"), f"list the parts of parts/{job.id}/")
    assert Upload.objects.get().received_bytes == len(raw)  # to complete once it is back


@pytest.mark.usefixtures("in_bucket")
def test_an_upload_to_a_stalled_bucket_is_answered_503_within_10_s(api, job, settings, monkeypatch):
    """The wait is the client's to bound: its timeouts and tries, which the server's clients
    carry and the stalled bucket counts (the test machine's clock, loaded, would add its own)."""
    for config in (
        django_storage_options(settings.STORAGE_URL)["client_config"],
        storage_bucket(settings.STORAGE_URL).client.meta.config,
    ):
        assert config.read_timeout == READ_TIMEOUT_S == 3.0
        assert config.connect_timeout == 3.0
        assert config.retries["total_max_attempts"] == ATTEMPTS == 2
    # Each try waits its read timeout after the 1 s a PUT waits for "100 Continue"; the retry's
    # backoff is at most 1 s (botocore's standard mode, first retry).
    assert ATTEMPTS * (READ_TIMEOUT_S + 1) + 1 < 10

    raw = TRACE.read_bytes()
    for send in ("whole", "range"):
        with StalledBucket() as bucket:
            point_at(bucket.endpoint, settings, monkeypatch)
            if send == "whole":
                response = post_part(api, job, TRACE)
            else:
                response = put_range(api, start_upload(api, job, TRACE.name, len(raw)), raw)
            assert bucket.tries() == ATTEMPTS
        assert_unavailable(response, "")
        assert "Read timeout on endpoint URL" in response.json()["detail"]
    assert not ProfilePart.objects.exists()
    assert Upload.objects.get().received_bytes == 0


def stored_part(api, job) -> int:
    response = post_part(api, job, TRACE)
    assert response.status_code == 202
    part_id = response.json()["id"]
    assert ingest.claim(part_id, "bucket-down-task")
    return part_id


def parse_that_fails(part_id: int) -> tuple[ProfilePart, float]:
    """Parses a claimed part that must fail (the bucket is out of reach); returns the failed
    part and the seconds the parse waited before giving up."""
    began = time.monotonic()
    assert not ingest.parse_claimed_part(part_id, "bucket-down-task")
    waited_s = time.monotonic() - began
    part = ProfilePart.objects.get(pk=part_id)
    assert part.state == PartState.FAILED
    return part, waited_s


def unreachable_error(part: ProfilePart, tried_s: int, reason: str) -> str:
    """How a part's error begins when the bucket stayed out of reach for ``tried_s``."""
    return (
        "This part could not be parsed: the storage bucket could not be reached "
        f"(tried for {tried_s} s; The object store could not read {part.file.name} ({reason}"
    )


@pytest.mark.usefixtures("in_bucket", "parsed_by_hand")
def test_a_parse_waits_for_the_bucket_then_fails_saying_it_could_not_be_reached(
    api, job, settings, monkeypatch
):
    settings.INGEST_BUCKET_RETRY_SECONDS = 3
    part_id = stored_part(api, job)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{s3.free_port()}")

    part, waited_s = parse_that_fails(part_id)
    assert part.error.startswith(unreachable_error(part, 3, "Could not connect")), part.error
    # Tried at 0, 1 and 3 s (the deadline), then gave up (loose above for a busy machine).
    assert 3 <= waited_s < 60, waited_s


@pytest.mark.usefixtures("in_bucket", "parsed_by_hand")
def test_a_parse_goes_on_when_the_bucket_is_back_within_its_wait(
    api, job, settings, monkeypatch, s3_endpoint
):
    settings.INGEST_BUCKET_RETRY_SECONDS = 30
    part_id = stored_part(api, job)
    port = s3.free_port()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    handler = s3.relay(s3_endpoint)
    servers = []

    def bucket_back_later() -> None:
        time.sleep(2)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
        servers.append(server)
        server.serve_forever()

    threading.Thread(target=bucket_back_later, daemon=True).start()
    try:
        assert ingest.parse_claimed_part(part_id, "bucket-down-task")
    finally:
        for server in servers:
            server.shutdown()
    assert ProfilePart.objects.get(pk=part_id).state == PartState.DONE


@pytest.mark.slow
@pytest.mark.usefixtures("in_bucket", "parsed_by_hand")
def test_a_parse_meeting_a_stalled_bucket_fails_its_part_with_the_reason_within_a_minute(
    api, job, monkeypatch
):
    part_id = stored_part(api, job)
    with StalledBucket() as bucket:  # the default timeouts and wait, as a worker runs them
        monkeypatch.setenv("AWS_ENDPOINT_URL", bucket.endpoint)
        part, waited_s = parse_that_fails(part_id)

    assert part.error.startswith(unreachable_error(part, 30, "Read timeout on endpoint URL")), (
        part.error
    )
    assert part.error.endswith(
        "Nothing of this part was changed; reprocess it once the bucket is back."
    )
    # 30 s of tries, the last one's 7 s and the cleanup's (its listing meets the stall too).
    assert 30 <= waited_s < 60, waited_s
