"""A worker rides out a Redis restart: killed while it parses, the worker lives on (same
process), finishes the part once, and takes new work when Redis is back.

The worker runs as the launcher starts it, against a redis-server of its own (killed and started
again, empty). Its parse waits on a row lock the test holds, so Redis goes down while the task
runs and the task ends (and is acknowledged) exactly when the test says: during the outage or
after it. Every wait is for a condition."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from pathlib import Path

import psycopg
import pytest
from celery import Celery
from django.conf import settings
from redis import Redis

from profiler_app.celery import app as celery_app
from profiler_app.cli import role_command
from profiler_app.core.logic import PartSource, store_part
from profiler_app.core.models import PartState, ProfilePart, TrainingJob
from profiler_app.ingest.models import IngestRun
from profiler_app.ingest.tasks import ingest_part
from profiler_app.profiles.models import KernelStat, PartSummary
from profiler_app.testing import database_url
from profiler_app.traces.window import WHOLE_TRACE, rows_in
from tests.conftest import wait_for
from tests.core.launcher import RedisServer
from tests.traces.expected import DATA, expected

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TRACE = DATA / "nccl_rank0.json.gz"


class Worker:
    """`profiler-app worker`'s command on a Redis of the test's, its output in a file."""

    def __init__(self, redis_url: str, folder: Path) -> None:
        self.redis_url = redis_url
        self.log_path = folder / "worker.log"
        env = {
            **os.environ,
            "DATABASE_URL": database_url(settings.DATABASES["default"]),
            "REDIS_URL": redis_url,
            "PYTHONUNBUFFERED": "1",
        }
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                role_command("worker", "127.0.0.1", 0),
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_for(lambda: "ready." in self.log() or self.process.poll() is not None, 300)
        assert self.process.poll() is None, self.log()

    def log(self) -> str:
        return self.log_path.read_text()

    def send(self, part_id: int) -> str:
        """Queues the part's parse on this worker's Redis; returns the task's id."""
        with celery_app.connection_for_write(self.redis_url) as connection:
            return ingest_part.apply_async(args=[part_id], connection=connection).id

    def finished(self, task_id: str) -> bool:
        """The task returned (the worker logs its end before it acknowledges it; a parse that
        could not queue its job's next steps during the outage ends "raised", its part done)."""
        ended = rf"ingest_part\[{re.escape(task_id)}\] (succeeded|raised)"
        return re.search(ended, self.log()) is not None

    def exited(self) -> bool:
        return self.process.poll() is not None

    def lost_the_broker(self) -> bool:
        return "Connection to broker lost" in self.log()

    def answers_ping(self) -> bool:
        # An app of its own: the project's app broadcasts through its own broker's pool.
        probe = Celery("probe", broker=self.redis_url, set_as_current=False)
        try:
            # A loaded machine answers late; the one worker's answer ends the wait.
            replies = probe.control.ping(timeout=5.0, limit=1)
        except probe.connection_for_write().connection_errors:
            return False  # a connection the restart broke: the next try makes a new one
        finally:
            probe.close()
        return any(name.startswith("celery@") for reply in replies for name in reply)

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            # Stuck: Celery logs every thread's stack on SIGUSR1 (shown with the log), then it
            # is killed, so the test fails on its own assertion with the reason in view.
            self.process.send_signal(signal.SIGUSR1)
            with contextlib.suppress(AssertionError):
                wait_for(lambda: "LOCAL VARIABLES" in self.log(), 30)
            self.process.kill()
            self.process.wait()


@pytest.fixture
def redis(tmp_path):
    server = RedisServer(tmp_path)
    server.start()
    yield server
    if server.process is not None and server.process.poll() is None:
        server.kill()


@pytest.fixture
def worker(redis, tmp_path, monkeypatch):
    # Two pool processes, as the launcher starts: while one parses, the worker waits on Redis
    # for more (the wait that the outage breaks).
    monkeypatch.setenv("WORKER_CONCURRENCY", "2")  # role_command reads it
    process = Worker(f"redis://127.0.0.1:{redis.port}/0", tmp_path)
    yield process
    try:
        process.stop()
    finally:
        print(process.log())  # shown when the test fails


class RowLock:
    """A lock on the part's row from a connection of its own: the worker's claim waits on it."""

    def __init__(self, part_id: int) -> None:
        self.conn = psycopg.connect(database_url(settings.DATABASES["default"]))
        self.conn.execute("SELECT 1 FROM core_profilepart WHERE id = %s FOR UPDATE", [part_id])

    def someone_waits(self) -> bool:
        with psycopg.connect(database_url(settings.DATABASES["default"])) as conn:
            waiting = conn.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE wait_event_type = 'Lock' AND datname = current_database() AND pid <> %s",
                [self.conn.info.backend_pid],
            ).fetchone()
        return waiting[0] > 0

    def release(self) -> None:
        self.conn.rollback()
        self.conn.close()


def stored_part(user, job_name: str) -> ProfilePart:
    job = TrainingJob.objects.create(name=job_name, owner=user)
    with TRACE.open("rb") as f:
        part, _ = store_part(job, PartSource("algo-1", 0, "kineto", TRACE.name), f)
    return part


@pytest.mark.parametrize("ends", ["during the outage", "after the outage"])
def test_it_finishes_a_part_once_across_a_redis_restart(user, redis, worker, parsed_by_hand, ends):
    # Asked until it answers: on a loaded machine its first answer can come past the probe's 5 s.
    wait_for(lambda: worker.exited() or worker.answers_ping(), 300)
    assert not worker.exited(), worker.log()
    part = stored_part(user, "in flight")
    lock = RowLock(part.id)
    try:
        task_id = worker.send(part.id)
        wait_for(lock.someone_waits, 300)  # the worker's task runs: it waits on the lock
        redis.kill()
        # Redis comes back only once the worker saw it go: its messages cannot be restored.
        wait_for(worker.lost_the_broker, 300)
        if ends == "during the outage":
            lock.release()
            wait_for(lambda: worker.finished(task_id), 300)
            redis.start()
        else:
            redis.start()
            lock.release()
        wait_for(lambda: ProfilePart.objects.get(id=part.id).state == PartState.DONE, 300)
    finally:
        if not lock.conn.closed:
            lock.release()

    wait_for(lambda: worker.exited() or worker.answers_ping(), 300)
    assert not worker.exited(), worker.log()
    part.refresh_from_db()
    assert (part.state, part.error, part.parse_attempts) == (PartState.DONE, "", 1)
    assert IngestRun.objects.filter(part=part).count() == 1
    assert PartSummary.objects.filter(part=part).count() == 1
    kernels = KernelStat.objects.filter(part=part, windows__in=rows_in(WHOLE_TRACE))
    assert sum(kernels.values_list("count", flat=True)) == sum(
        expected(TRACE.name).kernel_count.values()
    )
    # It works on: a part sent now is parsed by the same process.
    second = stored_part(user, "after it")
    worker.send(second.id)
    wait_for(lambda: ProfilePart.objects.get(id=second.id).state == PartState.DONE, 300)
    assert not worker.exited(), worker.log()


def test_it_takes_work_again_after_a_redis_restart_while_idle(user, redis, worker, parsed_by_hand):
    redis.kill()
    wait_for(worker.lost_the_broker, 300)
    redis.start()
    wait_for(lambda: worker.exited() or worker.answers_ping(), 300)
    assert not worker.exited(), worker.log()

    part = stored_part(user, "after an idle outage")
    worker.send(part.id)
    wait_for(lambda: ProfilePart.objects.get(id=part.id).state == PartState.DONE, 300)
    part.refresh_from_db()
    assert (part.error, part.parse_attempts) == ("", 1)
    assert not worker.exited(), worker.log()


def test_an_idle_worker_publishes_nothing_of_its_own(redis, worker):
    """Celery's worker heartbeat publishes from the main process every 2 s and retries there
    without end when Redis is gone at that moment: the worker would neither notice the outage
    nor stop on SIGTERM. The worker runs without it (`cli.WORKER_EVENTS_OFF`)."""
    own_queue = settings.CELERY_WORKER_QUEUES[0]
    commands: list[str] = []
    with Redis(port=redis.port).monitor() as monitor:
        for entry in monitor.listen():
            commands.append(entry["command"])
            # The main loop asks its queues with a BRPOP of 1 s at a time: four asks span three
            # seconds of that loop, past the heartbeat's first beat.
            if sum(c.startswith(f"BRPOP {own_queue} ") for c in commands) >= 4:
                break
    assert not [c for c in commands if "celeryev" in c]
