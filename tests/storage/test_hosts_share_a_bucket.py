"""Hosts that share nothing but Postgres, Redis and the bucket: a web process (gunicorn) and
two Celery workers, each with a data directory of its own, on moto's real S3 API. Upload →
parse → dashboard → timeline → delete; and a bucket that refuses a write or lost a file fails
the part with a message that says so, losing nothing.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

import pytest
import requests
from django.conf import settings

from profiler_app.accounts.logic import issue_token
from profiler_app.cli import WORKER_EVENTS_OFF
from profiler_app.core import storage
from profiler_app.testing import database_url
from tests.conftest import DATA_DIR, wait_for
from tests.storage import s3
from tests.timeline.drawn import viewport_totals
from tests.timeline.raw import raw_timeline
from tests.uploads import send_in_ranges

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

RANKS = ["multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz"]


class Hosts:
    """Processes started as if each ran on a host of its own."""

    def __init__(self, root: Path, storage_env: dict[str, str]) -> None:
        self.root = root
        self.storage_env = storage_env
        self.prefix = f"{settings.CELERY_QUEUE_PREFIX}hosts{uuid.uuid4().hex[:6]}-"
        self.stack = ExitStack()
        self.processes: list[subprocess.Popen] = []
        # Stopped together at the end (one at a time, each waited for in turn, took seconds).
        self.stack.callback(_stop_all, self.processes)

    def env(self, host: str, **extra: str) -> dict[str, str]:
        data = self.root / host
        return {
            **os.environ,
            **self.storage_env,
            "DATABASE_URL": database_url(settings.DATABASES["default"]),
            "CELERY_QUEUE_PREFIX": self.prefix,
            "PROFILER_DATA_DIR": str(data),
            "PROFILER_MEDIA_ROOT": str(data / "media"),
            "SECRET_KEY": "hosts-test",
            "PYTHONUNBUFFERED": "1",
            **extra,
        }

    def start(self, host: str, command: list[str], ready, **extra: str) -> subprocess.Popen:
        log_path = self.root / f"{host}.log"
        log = self.stack.enter_context(log_path.open("w"))
        process = subprocess.Popen(
            command, env=self.env(host, **extra), stdout=log, stderr=subprocess.STDOUT
        )
        self.processes.append(process)
        deadline = time.monotonic() + 90
        while not ready(log_path):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{host} did not start:\n{log_path.read_text()}")
            time.sleep(0.2)
        process.log_path = log_path  # type: ignore[attr-defined]
        return process

    def worker(self, host: str, **extra: str) -> subprocess.Popen:
        queues = ",".join(self.prefix + q for q in settings.WORKER_QUEUE_NAMES)
        command = [
            sys.executable, "-m", "celery", "-A", "profiler_app.celery", "worker",
            "--queues", queues, "--concurrency", "1", "--pool", "prefork",
            "--loglevel", "INFO", "--hostname", f"{host}-{os.getpid()}@%h",
            *WORKER_EVENTS_OFF,
        ]  # fmt: skip
        return self.start(host, command, lambda log: "ready." in log.read_text(), **extra)

    def web(self, host: str) -> str:
        port = s3.free_port()
        url = f"http://127.0.0.1:{port}"
        command = [
            sys.executable, "-m", "gunicorn", "profiler_app.wsgi:application",
            "--bind", f"127.0.0.1:{port}", "--workers", "2", "--timeout", "120",
        ]  # fmt: skip
        self.start(host, command, lambda _: _answers(f"{url}/api/health/"))
        return url

    def files(self, host: str, folder: str) -> list[Path]:
        root = self.root / host / folder
        return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=10).status_code < 500
    except requests.RequestException:  # not listening yet, or still starting up
        return False


def _stop(process: subprocess.Popen) -> None:
    _stop_all([process])


def _stop_all(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.terminate()
    deadline = time.monotonic() + 30
    for process in processes:
        try:
            process.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def hosts(s3_endpoint, bucket, tmp_path):
    started = Hosts(tmp_path, s3.storage_env(s3_endpoint, bucket))
    with started.stack:
        yield started


@pytest.fixture
def session(user) -> requests.Session:
    http = requests.Session()
    http.headers["Authorization"] = f"Token {issue_token(user, 'hosts')[1]}"
    return http


def upload_whole(http: requests.Session, web: str, job_id: int, rank: int, path: Path) -> int:
    fields = {"node": f"algo-{rank + 1}", "rank": str(rank), "kind": "kineto"}
    with path.open("rb") as f:
        sent = http.post(f"{web}/api/jobs/{job_id}/parts/", data=fields, files={"file": f})
    assert sent.status_code == 202, sent.text
    return sent.json()["id"]


def parts_of(http: requests.Session, web: str, job_id: int) -> list[dict]:
    response = http.get(f"{web}/api/jobs/{job_id}/parts/")
    assert response.status_code == 200, response.text
    body = response.json()
    return body["results"] if isinstance(body, dict) else body


def wait_final(http, web, job_id, count: int, timeout: float = 180) -> list[dict]:
    def final():
        parts = parts_of(http, web, job_id)
        done = len(parts) == count and all(p["state"] in ("done", "failed") for p in parts)
        return parts if done else None

    return wait_for(final, timeout=timeout, interval=0.5)


def raw_kernel_count(trace: str) -> int:
    with gzip.open(DATA_DIR / trace) as f:
        events = json.load(f)["traceEvents"]
    return sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == "kernel")


def parsed_by(worker: subprocess.Popen) -> int:
    """How many parts the worker parsed (its log's succeeded ingest tasks)."""
    log = worker.log_path.read_text()  # type: ignore[attr-defined]
    return sum(
        "ingest.tasks.ingest_part[" in line and " succeeded in " in line
        for line in log.splitlines()
    )


def test_a_job_parsed_on_one_host_is_viewed_and_deleted_from_another(
    hosts, session, s3_endpoint, bucket
):
    first, second = hosts.worker("worker-1"), hosts.worker("worker-2")
    web = hosts.web("web")
    job = session.post(f"{web}/api/jobs/", json={"name": "two hosts"}).json()
    ids = [
        send_in_ranges(
            session,
            web,
            job["id"],
            DATA_DIR / RANKS[0],
            node="algo-1",
            rank=0,
            range_bytes=64 * 1024,
        ),
        upload_whole(session, web, job["id"], 1, DATA_DIR / RANKS[1]),
    ]
    parts = wait_final(session, web, job["id"], 2)
    assert {p["state"] for p in parts} == {"done"}, [p["error"] for p in parts]

    # Nothing went through a shared disk: raw files and stores are in the bucket, no raw file
    # and no unfinished upload is in any data directory; the workers' caches hold the stores
    # they wrote, the web's none yet.
    stored = s3.keys(s3_endpoint, bucket, "profiles/")
    assert sum(k.startswith(f"profiles/parts/{job['id']}/") for k in stored) == 2
    assert not [k for k in stored if k.startswith("profiles/uploads/")]
    for part_id in ids:
        assert any(k.startswith(f"profiles/timeline/{job['id']}/{part_id}/") for k in stored)
    for host in ("web", "worker-1", "worker-2"):
        assert hosts.files(host, "media/parts") == [] and hosts.files(host, "uploads") == []
    assert hosts.files("web", "cache") == []
    assert len(
        hosts.files("worker-1", "cache/timeline") + hosts.files("worker-2", "cache/timeline")
    )

    # The dashboard and the timeline, served by the web host from the bucket, match the JSON.
    dashboard = session.get(f"{web}/api/jobs/{job['id']}/dashboard/").json()
    assert dashboard["kernel_time"]["total_count"] == sum(raw_kernel_count(t) for t in RANKS)
    count, busy = viewport_totals(session, web, job["id"])
    raws = [raw_timeline(t) for t in RANKS]
    assert count == sum(r.n_events for r in raws)
    assert busy == sum(sum(r.busy_ns.values()) for r in raws)
    web_cache = [p.name for p in hosts.files("web", "cache")]
    assert "meta.json" in web_cache and "events.parquet" not in web_cache

    deleted = session.delete(f"{web}/api/jobs/{job['id']}/")
    assert deleted.status_code == 204, deleted.text
    assert wait_for(lambda: s3.keys(s3_endpoint, bucket, "profiles/") == [], timeout=30)
    assert not [p for p in hosts.files("web", "cache") if f"timeline/{job['id']}/" in str(p)]
    # The two workers parsed the two parts between them (each part once).
    assert parsed_by(first) + parsed_by(second) == 2


def refuse_writes(method: str, path: str) -> bool:
    """A read-only policy, a full disk behind the endpoint: every write is refused (clearing
    up, DeleteObjects, still works)."""
    return method == "PUT" or (method == "POST" and "delete" not in path)


def refuse_raw_reads(method: str, path: str) -> bool:
    return method in ("GET", "HEAD") and "/parts/" in path


def refusing(upstream: str, refuse):
    return s3.serving(s3.relay(upstream, refuse))


def state_of(http, web: str, job_id: int, state: str) -> dict | None:
    [part] = parts_of(http, web, job_id)
    return part if part["state"] == state else None


def part_store(endpoint: str, bucket: str, job_id: int) -> list[str]:
    """The job's timeline stores in the bucket, without the insights results the workers keep
    beside them meanwhile (``storage.kept_key``)."""
    kept = f"profiles/{storage.kept_key(job_id, '')}"
    keys = s3.keys(endpoint, bucket, f"profiles/timeline/{job_id}/")
    return [key for key in keys if not key.startswith(kept)]


def test_a_bucket_that_refuses_a_write_or_a_read_fails_the_part_and_loses_nothing(
    hosts, session, s3_endpoint, bucket
):
    web = hosts.web("web")
    job = session.post(f"{web}/api/jobs/", json={"name": "refused"}).json()
    raw_prefix = f"profiles/parts/{job['id']}/"

    with refusing(s3_endpoint, refuse_writes) as read_only:
        worker = hosts.worker("read-only-worker", AWS_ENDPOINT_URL=read_only)
        part_id = upload_whole(session, web, job["id"], 0, DATA_DIR / RANKS[0])
        part = wait_for(lambda: state_of(session, web, job["id"], "failed"), timeout=120)
        _stop(worker)
    assert part["error"].startswith(f"The object store could not save timeline/{job['id']}/")
    assert "AccessDenied" in part["error"] and "reprocess it to try again" in part["error"]
    assert s3.keys(s3_endpoint, bucket, raw_prefix)  # the upload is kept
    assert s3.keys(s3_endpoint, bucket, "profiles/timeline/") == []  # nothing half-written

    with refusing(s3_endpoint, refuse_raw_reads) as unreadable:
        worker = hosts.worker("unreadable-worker", AWS_ENDPOINT_URL=unreadable)
        assert session.post(f"{web}/api/parts/{part_id}/reprocess/").status_code == 202
        part = wait_for(lambda: state_of(session, web, job["id"], "failed"), timeout=120)
        _stop(worker)
    assert part["error"].startswith(f"The object store could not read {raw_prefix[9:]}")
    assert s3.keys(s3_endpoint, bucket, raw_prefix)

    # With a bucket that answers again, reprocessing parses it.
    hosts.worker("worker")
    assert session.post(f"{web}/api/parts/{part_id}/reprocess/").status_code == 202
    wait_for(lambda: state_of(session, web, job["id"], "done"), timeout=120)
    store = part_store(s3_endpoint, bucket, job["id"])
    assert store

    # The raw file lost from the bucket: reprocessing is refused, saying why; the parsed part
    # and its timeline stay.
    [raw] = s3.keys(s3_endpoint, bucket, raw_prefix)
    s3.client(s3_endpoint).delete_object(Bucket=bucket, Key=raw)
    refused = session.post(f"{web}/api/parts/{part_id}/reprocess/")
    assert refused.status_code == 409 and refused.json()["code"] == "raw_file_gone"
    assert state_of(session, web, job["id"], "done")
    assert part_store(s3_endpoint, bucket, job["id"]) == store
    assert viewport_totals(session, web, job["id"])[0] == raw_timeline(RANKS[0]).n_events
