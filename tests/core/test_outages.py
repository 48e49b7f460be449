"""A broker restart stops nothing: `profiler-app up` (launcher, web, worker, sweeper, beat) rides
out a Redis outage, says so once, and works again when Redis is back, with the same processes.
Its embedded PostgreSQL, killed with SIGKILL, the launcher alone starts again.

The launcher runs as a person starts it, against its own Redis (killed and started again here)
and its own database on the machine's PostgreSQL, or its embedded one. Every wait is for a
condition (a line the launcher prints, an answer of the health endpoint), with a generous
deadline."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from tests.core.launcher import (
    DEADLINE_S,
    Launcher,
    RedisServer,
    alive,
    folder_outside_pytest,
    free_port,
    jobs_answer,
    wait_for,
)

pytestmark = [pytest.mark.services, pytest.mark.slow]


@pytest.fixture
def database_url():
    """A database of its own for the launcher to migrate, dropped afterwards."""
    base = urlsplit(os.environ["DATABASE_URL"])
    name = f"outage_{uuid.uuid4().hex[:12]}"
    admin = urlunsplit(base._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield urlunsplit(base._replace(path=f"/{name}"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_it_rides_out_a_redis_outage_with_the_same_processes(tmp_path, database_url):
    redis = RedisServer(tmp_path)
    redis.start()
    prefix = f"outage{uuid.uuid4().hex[:8]}-"
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": f"redis://127.0.0.1:{redis.port}/0",
        "PROFILER_DATA_DIR": str(tmp_path / "data"),
        "PROFILER_MEDIA_ROOT": str(tmp_path / "media"),
        "CELERY_QUEUE_PREFIX": prefix,
        "WEB_CONCURRENCY": "1",
        "WORKER_CONCURRENCY": "1",
        "HEALTH_WORKERS_SECONDS": "2",
    }
    launcher = Launcher(env, free_port())
    try:
        wait_for(lambda: launcher.said("profiler-app is running"), "the launcher to start")
        run = json.loads((tmp_path / "data" / "run.json").read_text())
        children = run["children"]
        assert set(children) == {"web", "worker", "sweeper", "beat"}

        redis.kill()
        wait_for(lambda: launcher.said("Redis is unreachable"), "the launcher to notice")
        report = wait_for(lambda: (h := launcher.health()).get("redis") == "error" and h, "health")
        assert report["database"] == "ok" and report["workers"] == 0
        assert launcher.process.poll() is None
        assert all(alive(pid) for pid in children.values()), launcher.seen

        redis.start()
        wait_for(lambda: launcher.said("Redis is reachable again"), "the launcher to reconnect")
        # Beat counts the workers through the broker and a worker answers: both are back.
        wait_for(lambda: launcher.health().get("workers", 0) > 0, "beat and a worker to work")
        assert launcher.health()["redis"] == "ok"
        run = json.loads((tmp_path / "data" / "run.json").read_text())
        assert run["children"] == children, "a process was restarted"
        assert sum("Redis is unreachable" in line for line in launcher.seen) == 1
    finally:
        launcher.stop()
        if redis.process is not None and redis.process.poll() is None:
            redis.kill()


@pytest.fixture
def host():
    with folder_outside_pytest() as folder:
        yield folder


def test_it_starts_a_killed_embedded_postgres_again(tmp_path, host):
    """SIGKILL leaves the dead server's postmaster.pid, socket lock and shared memory behind
    (and, under an init that does not reap, its zombie): the launcher starts it again alone."""
    redis = RedisServer(tmp_path)
    redis.start()
    data = host / "data"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "profiler_app.settings",
        "REDIS_URL": f"redis://127.0.0.1:{redis.port}/0",
        "PROFILER_DATA_DIR": str(data),
        "PROFILER_MEDIA_ROOT": str(tmp_path / "media"),
        "CELERY_QUEUE_PREFIX": f"pgkill{uuid.uuid4().hex[:8]}-",
        "WEB_CONCURRENCY": "1",
        "WORKER_CONCURRENCY": "1",
        "HEALTH_WORKERS_SECONDS": "2",
    }
    env.pop("DATABASE_URL", None)  # the launcher starts its embedded PostgreSQL
    launcher = Launcher(env, free_port())
    try:
        wait_for(launcher.serving, "the launcher to start")
        database = json.loads((data / "run.json").read_text())["database"]
        key = subprocess.run(
            [sys.executable, "-m", "django", "create_token", "admin", "outage test"],
            env={**env, "DATABASE_URL": database},
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        assert jobs_answer(launcher.url, key) == 200
        pidfile = data / "postgres" / "postmaster.pid"
        killed = int(pidfile.read_text().split()[0])

        os.kill(killed, signal.SIGKILL)

        wait_for(lambda: launcher.said("PostgreSQL is unreachable"), "the launcher to notice")
        wait_for(lambda: launcher.said("started the embedded PostgreSQL again"), "PostgreSQL again")
        assert launcher.said("PostgreSQL is reachable again")
        assert int(pidfile.read_text().split()[0]) != killed
        wait_for(lambda: jobs_answer(launcher.url, key) == 200, "the API to answer again")
        wait_for(lambda: launcher.health().get("workers", 0) > 0, "beat and a worker to work")
        assert launcher.health()["database"] == "ok"
        assert launcher.process.poll() is None
        assert not launcher.said("could not start the embedded PostgreSQL again"), launcher.seen

        launcher.stop()
        assert launcher.process.returncode == 0
        assert not pidfile.exists(), "the PostgreSQL started again was not stopped with the rest"
    finally:
        launcher.stop()
        redis.kill()


def test_a_database_down_at_start_is_named_and_nothing_is_started(tmp_path):
    """The migration is the first step that needs the database: the launcher says that it failed
    and why, starts none of its processes and exits 1 (a wrong DATABASE_URL is met the same
    way)."""
    redis = RedisServer(tmp_path)
    redis.start()
    env = {
        **os.environ,
        "DATABASE_URL": f"postgresql://postgres@127.0.0.1:{free_port()}/profiler",
        "REDIS_URL": f"redis://127.0.0.1:{redis.port}/0",
        "PROFILER_DATA_DIR": str(tmp_path / "data"),
        "PROFILER_MEDIA_ROOT": str(tmp_path / "media"),
    }
    launcher = Launcher(env, free_port())
    try:
        assert launcher.process.wait(DEADLINE_S) == 1
        wait_for(lambda: launcher.said("stopped"), "the launcher's last line")
    finally:
        launcher.stop()
        redis.kill()
    [failed] = [line for line in launcher.seen if "start-up step failed" in line]
    assert failed.startswith("[profiler-app] start-up step failed: migrate: connection failed")
    assert "Connection refused" in failed
    assert not launcher.said("started")
