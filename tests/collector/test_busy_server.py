"""``profiler-collect upload`` against a busy server: it waits out 429 with Retry-After, within
the bound the user sets, and no command leaves an empty job behind."""

from __future__ import annotations

import subprocess

import pytest

from profiler_app.core.models import ProfilePart, TrainingJob
from tests.conftest import wait_for
from tests.core.test_admission import queue

from .busy_proxy import BusyProxy
from .helpers import DATA, collector_chunks, live_uploader, python

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FILES = [
    DATA / "multirank_sampled" / "rank-0.json.gz",
    DATA / "multirank_sampled" / "rank-1.json.gz",
    DATA / "cpu_only_rank34.pt.trace.json.gz",
]


def upload(url: str, token: str, job: str, *extra: str) -> subprocess.CompletedProcess:
    command = [python(), "-m", "collector.cli", "upload", *map(str, FILES), "--job", job,
               "--server", url, "--token", token, *extra]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_it_waits_out_429_and_stores_every_file(server):
    proxy = BusyProxy(server.url, refusals=2, retry_after_s=1)
    try:
        done = upload(proxy.url, server.token, "busy-upload")
    finally:
        proxy.close()
    assert done.returncode == 0, done.stderr
    assert proxy.refused == 2
    assert done.stderr.count("server busy (429), as it asked: waiting 1 s before trying again") == 2
    job = TrainingJob.objects.get(name="busy-upload")
    assert job.status == "completed"
    stored = ProfilePart.objects.filter(job=job).order_by("original_name")
    assert [(p.original_name, p.size_bytes) for p in stored] == sorted(
        (f.name, f.stat().st_size) for f in FILES
    )


def test_when_the_wait_runs_out_it_fails_and_leaves_no_empty_job(server, user, settings):
    # The real server's admission: another job's 200 parts waiting, parsed at 2 in 10 s, are
    # 1,000 s of work, far over the bound: every part is refused with Retry-After 60.
    settings.INGEST_MAX_BACKLOG_SECONDS = 120
    other = TrainingJob.objects.create(name="the-backlog", owner=user)
    queue(other, waiting=200, finished=2, took_s=10)
    done = upload(server.url, server.token, "gives-up", "--max-wait", "10")
    assert done.returncode == 1
    assert done.stderr.count("FAILED") == len(FILES)
    assert "gave up: 0 s of --max-wait 10 s spent waiting" in done.stderr
    assert "removed the empty job 'gives-up': nothing was stored" in done.stderr
    assert not TrainingJob.objects.filter(name="gives-up").exists()
    assert ProfilePart.objects.filter(job=other).count() == 200 + 2  # untouched


def test_a_job_ending_while_the_server_asks_it_to_wait_leaves_it_alone(server, tmp_path):
    """At exit, a server that answered 429 with a Retry-After is not asked again at once: the
    chunk stays in the spool for a later flush."""
    proxy = BusyProxy(server.url, refusals=100, retry_after_s=60)
    try:
        uploader = live_uploader(proxy.url, server.token, tmp_path / "spool", "busy-at-exit")
        (chunk,) = collector_chunks(1)
        uploader.submit(chunk.name, chunk.read_bytes())
        wait_for(lambda: uploader.failed_tries >= 1, timeout=120, interval=0.05)
        assert not uploader.close(timeout_s=120)
    finally:
        proxy.close()
    assert proxy.refused == 1
    assert [p.name for p in (tmp_path / "spool").glob("*.pcol")] == [chunk.name]
    assert not ProfilePart.objects.filter(job__name="busy-at-exit").exists()
