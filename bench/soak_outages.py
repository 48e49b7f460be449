"""The faults of ``bench/soak.py``, one at a time on a running launcher: Redis killed and
started again (empty), PostgreSQL stopped and started, the worker killed mid-parse, the bucket
stalled, the disk full, and the launcher's own embedded PostgreSQL killed (SIGKILL), which the
launcher alone must start again.

Each fault starts while a part is being parsed and lasts ``outage_s``; one more part is uploaded
while it lasts (and, for some, one once it ended). The launcher and every process it runs must
ride it out (the killed worker is restarted by the launcher), and every part of the fault's job
must end, its insights computed. ``recovery_s`` is the time from the fault's end until each of
its parts was taken up again (the server's ``started_at`` of its last parse) or had ended;
``settled_s`` until they all ended and the insights were computed."""

from __future__ import annotations

import contextlib
import gzip
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import psutil
from soak_cases import DATA
from soak_load import FINAL, INSIGHTS_FINAL, Api, Stats, new_job
from soak_services import Bucket, Launcher, Postgres, Redis, SmallDisk

SMALL = DATA / "h100_cnn_kineto.json.gz"
RECOVERY_WAIT_S = 300


@dataclass
class Outage:
    name: str
    survived: bool = False
    recovery_s: float = float("nan")
    settled_s: float = float("nan")
    parts: dict[int, str] = field(default_factory=dict)  # part id -> state, error
    answers: list[str] = field(default_factory=list)  # what the server said during the fault

    def line(self) -> str:
        return (
            f"  {self.name}: survived={int(self.survived)} recovery_s={self.recovery_s:.1f} "
            f"settled_s={self.settled_s:.1f}; "
            f"parts: {'; '.join(self.parts.values())}; during it: {'; '.join(self.answers)}"
        )


class Fault:
    """One fault's job: a long parse running when it starts, an upload while it lasts."""

    def __init__(self, launcher: Launcher, token: str, name: str, large: Path) -> None:
        self.launcher = launcher
        self.api = Api(launcher.url, token, Stats())
        self.outage = Outage(name)
        self.children = launcher.children()
        self.said_down = launcher.said("is unreachable")
        self.job_id = new_job(self.api, f"outage-{name.replace(' ', '-')}", self.api.stats)
        self.part_ids: list[int] = []
        self.large = large

    def upload(self, path: Path, what: str, unique: int = 0) -> None:
        # Other bytes each time: the same file again in one job would be matched, not parsed.
        data = gzip.compress(gzip.decompress(path.read_bytes()), mtime=unique)
        started = time.monotonic()
        response, _ = self.api.call(
            "POST",
            f"/api/jobs/{self.job_id}/parts/",
            data={"node": "algo-1", "rank": len(self.part_ids), "kind": "kineto"},
            files={"file": (path.name, data)},
        )
        took = time.monotonic() - started
        if response is None:
            self.outage.answers.append(f"{what}: no answer after {took:.1f} s")
            return
        self.outage.answers.append(f"{what}: {response.status_code} in {took:.1f} s")
        if response.status_code in (200, 202):
            self.part_ids.append(response.json()["id"])
        elif response.status_code >= 400:
            self.outage.answers[-1] += f" {response.text[:160]}"

    def start_parse(self) -> None:
        """Uploads the large trace and waits (a while) for its parse to start."""
        self.upload(self.large, "the large trace before the fault", 1)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and self.part_ids:
            if self.state(self.part_ids[0]) != "pending":
                return
            time.sleep(0.2)

    def state(self, part_id: int) -> str | None:
        response, _ = self.api.call("GET", f"/api/jobs/{self.job_id}/parts/")
        with contextlib.suppress(AttributeError, ValueError, KeyError):
            for part in response.json()["results"]:
                if part["id"] == part_id:
                    return part["state"]
        return None

    def recover(self, ended: float, children_may_change: tuple[str, ...] = ()) -> Outage:
        """Waits for the parts and the insights; judges whether everything rode it out.
        ``ended``: time.time() at the fault's end (the server's clock is this machine's)."""
        outage = self.outage
        deadline = time.monotonic() + RECOVERY_WAIT_S - (time.time() - ended)
        while time.monotonic() < deadline:
            response, _ = self.api.call("GET", f"/api/jobs/{self.job_id}/parts/")
            parts = response.json()["results"] if response is not None and response.ok else []
            insights, _ = self.api.call("GET", f"/api/jobs/{self.job_id}/insights/")
            status = insights.json().get("status") if insights is not None and insights.ok else ""
            done = {p["id"]: p for p in parts if p["state"] in FINAL}
            if set(self.part_ids) <= set(done) and status in INSIGHTS_FINAL:
                outage.settled_s = time.time() - ended
                outage.recovery_s = max(taken_up(done[i], ended) for i in self.part_ids)
                outage.parts = {
                    i: f"{p['state']} {p['error'][:120]}".strip() for i, p in done.items()
                }
                break
            time.sleep(0.5)
        else:
            outage.parts = {i: "unfinished" for i in self.part_ids}
        now = self.launcher.children()
        same = all(
            now.get(r) == pid for r, pid in self.children.items() if r not in children_may_change
        )
        outage.survived = (
            self.launcher.alive()
            and same
            and self.launcher.health().get("database") == "ok"
            and self.launcher.health().get("redis") == "ok"
        )
        return outage


def taken_up(part: dict, ended: float) -> float:
    """Seconds from the fault's end until the part's last parse started (0: it ended before,
    or its parse rode the fault out)."""
    started = datetime.fromisoformat(part["started_at"]).timestamp() if part["started_at"] else 0
    finished = datetime.fromisoformat(part["finished_at"]).timestamp() if part["finished_at"] else 0
    return max(0.0, started - ended) if finished > ended else 0.0


def service_down(
    fault: Fault, service: str, stop: Callable[[], None], start: Callable[[], None], outage_s: float
) -> float:
    """``service`` down for ``outage_s`` mid-parse, with an upload meanwhile; when it was back."""
    fault.start_parse()
    stop()
    time.sleep(2)
    fault.upload(SMALL, f"an upload while {service} is down", 2)
    time.sleep(max(0.0, outage_s - 2))
    start()
    return time.time()


def redis_kill(
    launcher: Launcher, token: str, redis: Redis, outage_s: float, large: Path
) -> Outage:
    fault = Fault(launcher, token, "redis kill", large)
    outage = fault.recover(service_down(fault, "Redis", redis.kill, redis.start, outage_s))
    # The launcher says so once per outage.
    outage.survived &= launcher.said("is unreachable") == fault.said_down + 1
    return outage


def postgres_stop(
    launcher: Launcher, token: str, postgres: Postgres, outage_s: float, large: Path
) -> Outage:
    fault = Fault(launcher, token, "postgres stop", large)
    ended = service_down(fault, "PostgreSQL", postgres.stop, postgres.start, outage_s)
    fault.upload(SMALL, "an upload once it is back", 3)
    return fault.recover(ended)


def worker_kill(launcher: Launcher, token: str, outage_s: float, large: Path) -> Outage:
    """SIGKILL to the worker and its pool mid-parse; the launcher starts it again."""
    fault = Fault(launcher, token, "worker kill", large)
    fault.start_parse()
    worker = psutil.Process(launcher.children()["worker"])
    for process in [*worker.children(recursive=True), worker]:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    ended = time.time()
    fault.upload(SMALL, "an upload while the worker is dead", 2)
    return fault.recover(ended, children_may_change=("worker",))


def bucket_stall(
    launcher: Launcher, token: str, bucket: Bucket, outage_s: float, large: Path
) -> Outage:
    fault = Fault(launcher, token, "bucket stall", large)
    fault.start_parse()
    bucket.stall()
    # The upload waits on the bucket: on a thread of its own, so that the stall lasts outage_s.
    during = threading.Thread(
        target=fault.upload, args=(SMALL, "an upload while the bucket stalls", 2)
    )
    try:
        time.sleep(1)
        during.start()
        time.sleep(max(0.0, outage_s - 1))
    finally:
        bucket.resume()
    during.join()
    ended = time.time()
    fault.upload(SMALL, "an upload once it is back", 3)
    return fault.recover(ended)


def disk_full(
    launcher: Launcher, token: str, disk: SmallDisk, outage_s: float, large: Path
) -> Outage:
    fault = Fault(launcher, token, "disk full", large)
    fault.start_parse()
    disk.fill()
    try:
        fault.upload(SMALL, "an upload on a full disk", 2)
        time.sleep(outage_s)
    finally:
        disk.free()
    ended = time.time()
    fault.upload(SMALL, "an upload once space is free", 3)
    return fault.recover(ended)


def embedded_postgres_kill(launcher: Launcher, token: str, large: Path) -> Outage:
    """SIGKILL to the launcher's embedded PostgreSQL mid-parse: nobody starts it but the
    launcher, so the outage lasts until it has (at most a minute)."""
    fault = Fault(launcher, token, "embedded postgres kill", large)
    fault.start_parse()
    pidfile = launcher.data / "postgres" / "postmaster.pid"
    killed = int(pidfile.read_text().split()[0])
    restarted = launcher.said("started the embedded PostgreSQL again")
    os.kill(killed, signal.SIGKILL)
    time.sleep(2)
    fault.upload(SMALL, "an upload while PostgreSQL is dead", 2)
    deadline = time.monotonic() + 60
    while launcher.said("started the embedded PostgreSQL again") == restarted:
        if time.monotonic() > deadline:
            fault.outage.answers.append("the launcher did not start PostgreSQL within 60 s")
            return fault.outage
        time.sleep(0.2)
    ended = time.time()
    fault.upload(SMALL, "an upload once it is back", 3)
    return fault.recover(ended)
