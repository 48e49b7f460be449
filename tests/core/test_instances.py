"""Two instances of `profiler-app up` on one host, each with its own data directory (and its
embedded PostgreSQL and Redis): every socket and pid file an instance makes lies in its own data
directory, and stopping one removes its own and leaves the other's, which keeps serving. Each
first start makes its own administrator, whose password it keeps in its data directory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import requests
from gunicorn.ctl.client import ControlClient

from profiler_app.cli import ADMIN_USER, control_socket
from tests.core.launcher import Launcher, folder_outside_pytest, free_port, wait_for

pytestmark = [pytest.mark.services, pytest.mark.slow]

# What the test run points at (its servers, media folder, queue names): an instance has its own.
NOT_INHERITED = ("DATABASE_URL", "REDIS_URL", "PROFILER_MEDIA_ROOT", "CELERY_QUEUE_PREFIX")


class Instance:
    def __init__(self, data: Path) -> None:
        self.data = data
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
        env.update(PROFILER_DATA_DIR=str(data), WEB_CONCURRENCY="1", WORKER_CONCURRENCY="1")
        self.launcher = Launcher(env, self.port)

    def files(self) -> dict[str, Path]:
        """Its sockets and pid files while it runs."""
        return {
            "run file (the launcher's and its children's pids)": self.data / "run.json",
            "web control socket": control_socket(self.data, self.port),
            "Redis socket": self.data / "redis" / "redis.sock",
            "Redis pid file": self.data / "redis" / "redis.pid",
            "PostgreSQL socket": self.data / "postgres" / ".s.PGSQL.5432",
            "PostgreSQL pid file": self.data / "postgres" / "postmaster.pid",
        }

    def listens_on(self) -> list[str]:
        """The addresses its web server says it serves, asked through its control socket."""
        with ControlClient(str(control_socket(self.data, self.port)), timeout=10) as client:
            answer = client.send_command("show listeners")
        return [listener["address"] for listener in answer["listeners"]]

    def pids(self) -> dict[str, int]:
        return json.loads((self.data / "run.json").read_text())["children"]

    def signs_in(self, password: str) -> bool:
        """The administrator signs in with ``password`` as the login page does."""
        base = self.launcher.url
        session = requests.Session()
        session.get(f"{base}/api/auth/me/", timeout=10)  # sets the CSRF cookie
        answer = session.post(
            f"{base}/api/auth/login/",
            json={"username": ADMIN_USER, "password": password},
            headers={"X-CSRFToken": session.cookies["csrftoken"]},
            timeout=10,
        )
        return answer.status_code == 200 and answer.json()["username"] == ADMIN_USER


@pytest.fixture
def host():
    with folder_outside_pytest() as folder:
        yield folder


def test_two_instances_on_one_host_keep_their_own_files(host):
    first, second = Instance(host / "first"), Instance(host / "second")
    try:
        for instance in (first, second):
            wait_for(instance.launcher.serving, "an instance to serve")
        for instance in (first, second):
            assert {
                what: path.exists() for what, path in instance.files().items()
            } == dict.fromkeys(instance.files(), True)
            assert instance.listens_on() == [f"http://127.0.0.1:{instance.port}"]
        passwords = []
        for instance in (first, second):
            assert instance.launcher.said(f"created the administrator account '{ADMIN_USER}'")
            kept = instance.data / "admin-password.txt"
            assert kept.stat().st_mode & 0o777 == 0o600
            passwords.append(kept.read_text().strip())
            assert instance.signs_in(passwords[-1])
            assert not instance.signs_in(passwords[-1] + "x")
        assert passwords[0] != passwords[1]
        second_pids = second.pids()

        first.launcher.stop()

        assert first.launcher.process.returncode == 0
        assert {what: path.exists() for what, path in first.files().items()} == dict.fromkeys(
            first.files(), False
        )
        assert {what: path.exists() for what, path in second.files().items()} == dict.fromkeys(
            second.files(), True
        )
        assert second.listens_on() == [f"http://127.0.0.1:{second.port}"]
        health = second.launcher.health()
        assert (health["database"], health["redis"]) == ("ok", "ok")
        assert second.pids() == second_pids
    finally:
        first.launcher.stop()
        second.launcher.stop()
