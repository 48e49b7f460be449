"""The traffic of ``bench/soak.py``: uploader, reader, hostile and large-trace threads against a
running server, the answers they got, and how to wait for the server to finish what they sent."""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import requests
from soak_cases import COLLECTOR_CHUNKS, DATA, TRACES, Hostile

FINAL = ("done", "failed")
INSIGHTS_FINAL = ("done", "failed", "no_data")
REQUEST_TIMEOUT_S = 60
RUN = time.strftime("%Y%m%d-%H%M%S")  # in job names: a server may see several runs
HOSTILE_PER_JOB = 40


@dataclass
class Stats:
    """Shared by every thread; one lock guards it all (the counts are tiny)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    errors: list[str] = field(default_factory=list)
    unexpected_4xx: list[str] = field(default_factory=list)
    reader_ms: list[float] = field(default_factory=list)
    # job id -> ids of the parts its uploads created or matched
    soak_parts: dict[int, set[int]] = field(default_factory=dict)
    hostile_parts: dict[int, set[int]] = field(default_factory=dict)
    hostile_answers: dict[int, int] = field(default_factory=dict)
    hostile_names: dict[int, str] = field(default_factory=dict)  # part id -> case
    hostile_refused: list[tuple[str, int, str]] = field(default_factory=list)
    hostile_cases: int = 0
    uploads: int = 0
    # 429 ingest_busy answers waited out (Retry-After), and parts still refused at the load's end
    busy_waits: int = 0
    busy_unsent: int = 0
    reads_by_path: dict[str, list[float]] = field(default_factory=dict)
    large_jobs: list[int] = field(default_factory=list)

    def error(self, what: str) -> None:
        with self.lock:
            self.errors.append(what)


class Api:
    """requests with the token, timing, and 5xx/connection errors counted in ``stats``. A 429
    is waited out as the product's own senders do (Retry-After, then the same request again),
    until ``busy_until`` (monotonic); past it the 429 is the answer."""

    def __init__(self, url: str, token: str, stats: Stats, busy_until: float | None = None) -> None:
        self.url = url.rstrip("/")
        self.stats = stats
        self.busy_until = busy_until
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Token {token}"
        # A new connection per request: gunicorn closes a connection idle for 2 s, and a request
        # sent on one just as it closes is reset before the server reads it (the HTTP keep-alive
        # race, not an error of the server).
        self.session.headers["Connection"] = "close"

    def call(self, method: str, path: str, **kwargs) -> tuple[requests.Response | None, float]:
        while True:
            response, elapsed = self._call_once(method, path, **kwargs)
            if response is None or response.status_code != 429 or self.busy_until is None:
                return response, elapsed
            wait_s = float(response.headers.get("Retry-After", 5))
            if time.monotonic() + wait_s > self.busy_until:
                return response, elapsed
            with self.stats.lock:
                self.stats.busy_waits += 1
            time.sleep(wait_s)
            for value in (kwargs.get("files") or {}).values():  # send the file from its start
                if hasattr(value[1], "seek"):
                    value[1].seek(0)

    def _call_once(self, method: str, path: str, **kwargs):
        started = time.perf_counter()
        try:
            response = self.session.request(
                method, self.url + path, timeout=REQUEST_TIMEOUT_S, **kwargs
            )
        except requests.RequestException as exc:
            self.stats.error(f"{method} {path}: {type(exc).__name__}: {exc}"[:300])
            return None, time.perf_counter() - started
        elapsed = time.perf_counter() - started
        if response.status_code >= 500:
            self.stats.error(f"{method} {path}: {response.status_code} {response.text[:200]}")
        return response, elapsed


# --- threads -------------------------------------------------------------------------------


def uploader(api: Api, index: int, deadline: float, pause_s: float, stats: Stats) -> None:
    """Jobs of three parts, one after another: two traces as rank 0 (a rank of several parts)
    and a third as rank 1, or three collector chunks."""
    rng = random.Random(index)
    for n in itertools.count():
        if time.monotonic() >= deadline or n >= 10_000:
            return
        job_id = new_job(api, f"soak-u{index}-{n}", stats)
        if job_id is None:
            time.sleep(1)
            continue
        if n % 3 == 2:
            files = [(0, "collector", c) for c in rng.sample(COLLECTOR_CHUNKS, 3)]
        else:
            picks = rng.sample(TRACES, 3)
            files = [
                (0, "kineto", DATA / picks[0]),
                (0, "kineto", DATA / picks[1]),
                (1, "kineto", DATA / picks[2]),
            ]
        for rank, kind, path in files:
            upload_part(api, job_id, path, stats, rank, kind)
        time.sleep(pause_s)


def upload_part(
    api: Api, job_id: int, path: Path, stats: Stats, rank: int = 0, kind: str = "kineto"
) -> int | None:
    """One part uploaded into ``stats.soak_parts``; its id, or None when refused."""
    with path.open("rb") as f:
        response, _ = api.call(
            "POST",
            f"/api/jobs/{job_id}/parts/",
            data={"node": "algo-1", "rank": rank, "kind": kind},
            files={"file": (path.name, f)},
        )
    if response is not None and response.status_code == 429:  # still busy as the load ended
        with stats.lock:
            stats.busy_unsent += 1
        return None
    if response is None or response.status_code not in (200, 202):
        note_unexpected(stats, response, f"upload {path.name}")
        return None
    with stats.lock:
        stats.soak_parts.setdefault(job_id, set()).add(response.json()["id"])
        stats.uploads += 1
    return response.json()["id"]


def new_job(api: Api, name: str, stats: Stats) -> int | None:
    response, _ = api.call("POST", "/api/jobs/", json={"name": f"{name}-{RUN}"})
    if response is None or response.status_code != 201:
        note_unexpected(stats, response, f"create job {name}")
        return None
    with stats.lock:
        stats.soak_parts.setdefault(response.json()["id"], set())
    return response.json()["id"]


def large_uploader(api: Api, paths: list[Path], deadline: float, stats: Stats) -> None:
    """Each valid large trace as a job of its own, spread over the traffic."""
    for i, path in enumerate(paths):
        job_id = new_job(api, f"large-{i}", stats)
        if job_id is not None and upload_part(api, job_id, path, stats) is not None:
            stats.large_jobs.append(job_id)
        time.sleep(max(0.0, (deadline - time.monotonic()) / (len(paths) - i + 1)))


def note_unexpected(stats: Stats, response: requests.Response | None, what: str) -> None:
    if response is not None and response.status_code < 500:
        with stats.lock:
            stats.unexpected_4xx.append(f"{what}: {response.status_code} {response.text[:200]}")


def reader(api: Api, index: int, deadline: float, stats: Stats) -> None:
    """A person reading the catalog and the pages of parsed jobs: the job list every fifth
    round, then a parsed job's Dashboard, summary, timeline tracks and insights. The newest
    jobs wait behind a backlog of parses, so a list without a parsed job is read on, a page
    further each round, as a person scrolls to the jobs that have data; a job parsed stays so."""
    rng = random.Random(1000 + index)
    parsed: set[int] = set()
    page = 1
    for n in itertools.count():
        if time.monotonic() >= deadline or n >= 100_000:
            return
        if n % 5 == 0 or not parsed:
            params = {"ordering": "-created_at", "page": page}
            response, elapsed = api.call("GET", "/api/jobs/", params=params)
            record(stats, response, elapsed, "job list")
            if response is not None and response.status_code == 200:
                body = response.json()
                found = {j["id"] for j in body["results"] if j["parts_done"]}
                parsed |= found
                page = 1 if found or not body["next"] else page + 1
            if not parsed:
                time.sleep(0.5)
                continue
        job_id = rng.choice(sorted(parsed))
        for path in ("dashboard", "summary", "timeline/tracks", "insights"):
            response, elapsed = api.call("GET", f"/api/jobs/{job_id}/{path}/")
            record(stats, response, elapsed, path)


def many_tracks_reader(api: Api, job_id: int, deadline: float, stats: Stats) -> None:
    """A person reading one job of 200,000 tracks while the others read theirs: its Dashboard
    and its timeline's track tree, over and over (the web processes each read it first once)."""
    while time.monotonic() < deadline:
        for path in ("dashboard", "timeline/tracks"):
            response, elapsed = api.call("GET", f"/api/jobs/{job_id}/{path}/")
            record(stats, response, elapsed, f"many tracks {path}")


def record(stats: Stats, response: requests.Response | None, elapsed: float, what: str) -> None:
    if response is None:
        return
    with stats.lock:
        stats.reader_ms.append(elapsed * 1000)
        stats.reads_by_path.setdefault(what, []).append(elapsed * 1000)
    if response.status_code != 200:
        note_unexpected(stats, response, what)


def hostile_feeder(api: Api, cases: list[Hostile], deadline: float, stats: Stats) -> None:
    """Spreads the cases over the soak's duration, HOSTILE_PER_JOB parts per job."""
    job_id = 0
    for i, case in enumerate(cases):
        if i % HOSTILE_PER_JOB == 0:
            response, _ = api.call(
                "POST", "/api/jobs/", json={"name": f"hostile-{RUN}-{i // HOSTILE_PER_JOB}"}
            )
            if response is None or response.status_code != 201:
                note_unexpected(stats, response, "create hostile job")
                return
            job_id = response.json()["id"]
            stats.hostile_parts[job_id] = set()
        source = {"node": "hostile", "rank": i, "kind": case.kind}
        if case.resumable:
            response = resumable(api, job_id, source, case)
        else:
            response, _ = api.call(
                "POST",
                f"/api/jobs/{job_id}/parts/",
                data=source,
                files={"file": (case.filename, case.data)},
            )
        with stats.lock:
            stats.hostile_cases += 1
            if response is not None:
                code = response.status_code
                stats.hostile_answers[code] = stats.hostile_answers.get(code, 0) + 1
                if code in (200, 202):
                    part_id = response.json()["id"]
                    stats.hostile_parts[job_id].add(part_id)
                    stats.hostile_names[part_id] = case.name
                else:
                    stats.hostile_refused.append((case.name, code, response.text[:300]))
        left = deadline - time.monotonic()
        time.sleep(max(0.0, min(1.0, left / max(1, len(cases) - i))))


def resumable(api: Api, job_id: int, source: dict, case: Hostile) -> requests.Response | None:
    """A hostile case on the resumable path; the last answer (of complete, if it got there)."""
    start = {**source, "filename": case.filename, "size_bytes": case.size_bytes}
    response, _ = api.call("POST", f"/api/jobs/{job_id}/uploads/", json=start)
    if response is None or response.status_code != 201:
        return response
    url = f"/api/uploads/{response.json()['id']}/"
    for step in case.steps:
        if step is None:
            response, _ = api.call("POST", f"{url}complete/")
            continue
        content_range, body = step
        headers = {"Content-Type": "application/octet-stream"}
        if content_range is not None:
            headers["Content-Range"] = content_range
        response, _ = api.call("PUT", url, data=body, headers=headers)
    return response


def unfinished(api: Api, jobs: dict[int, set[int]]) -> tuple[int, dict[int, dict]]:
    """(parts of ``jobs`` not done or failed, part id -> the part, for every part seen)."""
    parts: dict[int, dict] = {}
    for job_id in jobs:
        path: str | None = f"/api/jobs/{job_id}/parts/"
        while path:
            response, _ = api.call("GET", path)
            if response is None or response.status_code != 200:
                break
            body = response.json()
            parts.update({p["id"]: p for p in body["results"]})
            path = body["next"][len(api.url) :] if body["next"] else None
    left = sum(
        1 for ids in jobs.values() for i in ids if parts.get(i, {}).get("state") not in FINAL
    )
    return left, parts


def parts_left(api: Api, jobs: Iterable[int]) -> int | None:
    """Parts of ``jobs`` neither done nor failed, from the job list's counts: a request per 50
    jobs, where ``unfinished`` asks each job. None when a page did not come."""
    wanted = set(jobs)
    left = 0
    path: str | None = "/api/jobs/"
    while path:
        response, _ = api.call("GET", path)
        if response is None or response.status_code != 200:
            return None
        body = response.json()
        left += sum(
            j["parts_total"] - j["parts_done"] - j["parts_failed"]
            for j in body["results"]
            if j["id"] in wanted
        )
        path = body["next"][len(api.url) :] if body["next"] else None
    return left


def insights(api: Api, jobs: Iterable[int], deadline: float) -> dict[int, dict]:
    """Each job's insights once none is queued or running (or at ``deadline``)."""
    found: dict[int, dict] = {}
    while True:
        for job_id in jobs:
            if found.get(job_id, {}).get("status") not in INSIGHTS_FINAL:
                response, _ = api.call("GET", f"/api/jobs/{job_id}/insights/")
                if response is not None and response.status_code == 200:
                    found[job_id] = response.json()
        pending = [j for j in jobs if found.get(j, {}).get("status") not in INSIGHTS_FINAL]
        if not pending or time.monotonic() > deadline:
            return found
        time.sleep(3)
