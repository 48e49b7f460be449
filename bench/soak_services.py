"""What `bench/soak.py` runs the server on, each its own so that it may be broken: a PostgreSQL
cluster in a temporary folder (``pg_ctl``), a ``redis-server`` on its own port, moto's S3 server
(a bucket), a small filesystem (tmpfs), and ``profiler-app up`` itself. The machine's shared
loopback PostgreSQL and Redis are never touched."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.core.launcher import redis_answers, throwaway_redis_command  # noqa: E402
from tests.storage import s3  # noqa: E402
from tests.storage.s3 import free_port  # noqa: E402

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def wait_until(condition, what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"gave up waiting for {what}")
        time.sleep(0.2)


def _as_postgres(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: then as the machine's postgres user."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


class Postgres:
    """A cluster of our own on a loopback port, stopped and started at will."""

    def __init__(self) -> None:
        # A folder of its own: the postgres user cannot enter the caller's private ones.
        self.root = scratch("soak-pg-")
        self.data = self.root / "pg"
        self.log = self.root / "pg.log"
        self.port = free_port()
        self.url = self.url_of("profiler")
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
        command = [
            str(PG_BIN / "initdb"),
            "-D", str(self.data),
            "-U", "postgres",
            "--auth=trust",
            "-E", "UTF8",
        ]  # fmt: skip
        subprocess.run(_as_postgres(command), check=True, capture_output=True)

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data} -c fsync=off "
            "-c synchronous_commit=off -c max_connections=300"
        )
        command = [
            str(PG_BIN / "pg_ctl"),
            "-D", str(self.data),
            "-l", str(self.log),
            "-o", options,
            "-w", "start",
        ]  # fmt: skip
        subprocess.run(_as_postgres(command), check=True, capture_output=True)

    def url_of(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url_of("postgres"), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")

    def stop(self, mode: str = "fast") -> None:
        subprocess.run(
            _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop"]),
            capture_output=True,
        )

    def remove(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


class Redis:
    """redis-server on its own loopback port, keeping nothing: a kill loses every queued task."""

    def __init__(self, work: Path) -> None:
        self.port = free_port()
        self.work = work
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        command = throwaway_redis_command("redis-server", self.port, self.work)
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        wait_until(lambda: redis_answers(self.port), "Redis to listen", 30)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class Bucket:
    """moto's S3 server and one bucket; a stall is SIGSTOP (connections hang, nothing is lost)."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )

        def up() -> bool:
            with contextlib.suppress(requests.RequestException):
                return requests.get(f"{self.endpoint}/moto-api/data.json", timeout=1).ok
            return False

        wait_until(up, "the moto server", 60)
        self.env = s3.storage_env(self.endpoint, s3.new_bucket(self.endpoint))

    def stall(self) -> None:
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        self.resume()
        self.process.terminate()
        self.process.wait(10)


class SmallDisk:
    """A tmpfs of ``size_mb``: a full disk without filling the machine's."""

    def __init__(self, path: Path, size_mb: int) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path)], check=True
        )
        self.filler = path / "filler"

    def fill(self) -> None:
        with self.filler.open("wb") as f, contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * (1 << 20))
                f.flush()

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def unmount(self) -> None:
        subprocess.run(["umount", "-l", str(self.path)], check=False)


@dataclass
class Peak:
    """Peak RSS of a process tree, sampled every 0.25 s on a thread; ``single`` is the largest
    one process reached, ``total`` the largest sum of the tree."""

    pids: callable  # returns the root pids to sample now (they change when one is restarted)
    total: int = 0
    single: int = 0
    by_pid: dict[int, int] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            sizes = tree_rss(self.pids())
            if sum(sizes.values()) > self.total:
                self.total, self.by_pid = sum(sizes.values()), sizes
            self.single = max([self.single, *sizes.values()])

    def stop(self) -> Peak:
        self._stop.set()
        self._thread.join()
        return self


def tree_rss(roots: list[int]) -> dict[int, int]:
    sizes: dict[int, int] = {}
    for root in roots:
        with contextlib.suppress(psutil.NoSuchProcess):
            for process in [psutil.Process(root), *psutil.Process(root).children(recursive=True)]:
                with contextlib.suppress(psutil.NoSuchProcess):
                    sizes[process.pid] = process.memory_info().rss
    return sizes


class Launcher:
    """``profiler-app up`` as a person starts it, on our own services: it runs web, worker and
    beat and restarts one that exits; its run file names their pids."""

    def __init__(self, env: dict[str, str], logs: Path, name: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data = Path(env["PROFILER_DATA_DIR"])
        self.log_path = logs / f"{name}.log"
        self.env = env
        self.process = subprocess.Popen(
            [sys.executable, "-m", "profiler_app.cli", "up", "--port", str(self.port)],
            env=env,
            cwd=ROOT,
            stdout=self.log_path.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_until(lambda: self.health().get("workers", 0) > 0, f"{name} to be healthy", 180)

    def health(self) -> dict:
        try:
            return requests.get(f"{self.url}/api/health/", timeout=5).json()
        except (requests.RequestException, ValueError):
            return {}

    def children(self) -> dict[str, int]:
        with contextlib.suppress(OSError, ValueError):
            return json.loads((self.data / "run.json").read_text())["children"]
        return {}

    def said(self, text: str) -> int:
        return sum(
            text in line and line.startswith("[profiler-app]")
            for line in self.log_path.read_text(errors="replace").splitlines()
        )

    def alive(self) -> bool:
        return self.process.poll() is None and all(
            psutil.pid_exists(pid) for pid in self.children().values()
        )

    def manage(self, code: str) -> str:
        env = dict(self.env)
        # A launcher with its embedded PostgreSQL names the server it started in its run file.
        if "DATABASE_URL" not in env:
            env["DATABASE_URL"] = json.loads((self.data / "run.json").read_text())["database"]
        done = subprocess.run(
            [sys.executable, "-m", "django", "shell", "-c", code],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip().splitlines()[-1]

    def token(self, username: str) -> str:
        return self.manage(
            "from django.contrib.auth import get_user_model;"
            "from profiler_app.accounts.logic import issue_token;"
            f"user, _ = get_user_model().objects.get_or_create(username={username!r});"
            f"print(issue_token(user, {username!r})[1])"
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def base_env(work: Path, postgres: Postgres, redis: Redis) -> dict[str, str]:
    """Production settings, only the services and folders our own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROFILER_", "AWS_"))}
    env.update(
        DATABASE_URL=postgres.url,
        REDIS_URL=redis.url,
        PROFILER_DATA_DIR=str(work / "data"),
        CELERY_QUEUE_PREFIX="soak-",
        DJANGO_SETTINGS_MODULE="profiler_app.settings",
        PYTHONPATH=str(ROOT),
        # How often beat counts the workers for the health answer: a launcher is healthy sooner.
        HEALTH_WORKERS_SECONDS="5",
    )
    for name in (
        "TRACE_MAX_DECOMPRESSED_BYTES",
        "WORKER_MEMORY_LIMIT_MB",
        "INGEST_STALL_SECONDS",
        "INGEST_SWEEP_SECONDS",
        "WEB_CONCURRENCY",
        "WORKER_CONCURRENCY",
    ):
        env.pop(name, None)
    return env


def scratch(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))
