"""Soak and hostile-input benchmark against a real server: nothing stuck, no 5xx, bounded memory.

Starts web (gunicorn), a Celery worker and beat on 127.0.0.1 with a fresh database (or uses a
running server with ``--url`` and ``--token``), creates a user and an API token, then for
``--duration`` seconds runs:

* N uploader threads: each creates jobs and uploads real traces from ``tests/data`` as their
  parts (``POST /api/jobs/``, ``POST /api/jobs/{id}/parts/``), two of them as one rank;
* M reader threads: the job list, then the dashboard, summary, timeline tracks and insights of a
  job with parsed parts;
* one hostile thread: ≥ 200 broken or malicious uploads (``bench/soak_cases.py``): variants of
  the families in ``tests/traces/test_hostile_input.py`` and ``tests/ingest/test_robustness.py``
  (truncated and corrupt gzip, invalid JSON, wrong types, deep nesting, gzip and zip/npy bombs,
  crafted repeated headers, NUL and over-long names, out-of-range base times, wrong kinds, empty
  files, odd file names). A 4xx answer is fine; a part it creates must end, failed or done.

Then it waits (at most ``--drain-timeout``) for every part to end, and prints, last::

    RESULT soak_errors=<n> soak_parts_unfinished=<n> soak_p95_ms=<n> hostile_cases=<n>
    hostile_stuck=<n> worker_peak_rss_mb=<n>

soak_errors counts 5xx answers and connection errors of every request; worker_peak_rss_mb is the
peak summed RSS of the worker's process tree (sampled with psutil every 0.25 s). Also printed:
the insights of every job (none may stay queued or running), soak parts that failed, hostile
cases that failed inside the server, and each hostile case's outcome in
``var/bench/soak-hostile.tsv``; the server's logs are kept in ``var/bench/soak-logs/``.

    .venv/bin/python bench/soak.py [--duration 60] [--uploaders 4] [--readers 4]

Uses DATABASE_URL / REDIS_URL when set (else the embedded services, as ``manage.py`` does); the
benchmark creates and drops its own database and uses its own queue names and data folder.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psutil
import redis
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import DATA, ROOT, database_env  # noqa: E402
from soak_cases import COLLECTOR_CHUNKS, TRACES, Hostile, hostile_cases  # noqa: E402

FINAL = ("done", "failed")
INSIGHTS_FINAL = ("done", "failed", "no_data")
REQUEST_TIMEOUT_S = 60
RUN = time.strftime("%Y%m%d-%H%M%S")  # in job names: a server may see several runs (--url)
HOSTILE_PER_JOB = 40
# A part's error with these words means the server, not the file, failed.
INTERNAL_FAILURE = ("unexpectedly", "could not be stored", "died while parsing")


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
    peak_rss_bytes: int = 0
    peak_rss_by_pid: dict[int, int] = field(default_factory=dict)

    def error(self, what: str) -> None:
        with self.lock:
            self.errors.append(what)


class Api:
    """requests with the token, timing, and 5xx/connection errors counted in ``stats``."""

    def __init__(self, url: str, token: str, stats: Stats) -> None:
        self.url = url.rstrip("/")
        self.stats = stats
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Token {token}"
        # A new connection per request: gunicorn closes a connection idle for 2 s, and a request
        # sent on one just as it closes is reset before the server reads it (the HTTP keep-alive
        # race, not an error of the server).
        self.session.headers["Connection"] = "close"

    def call(self, method: str, path: str, **kwargs) -> tuple[requests.Response | None, float]:
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
    rng = random.Random(index)
    for n in itertools.count():
        if time.monotonic() >= deadline or n >= 10_000:
            return
        response, _ = api.call("POST", "/api/jobs/", json={"name": f"soak-{RUN}-u{index}-{n}"})
        if response is None or response.status_code != 201:
            note_unexpected(stats, response, "create job")
            time.sleep(1)
            continue
        job_id = response.json()["id"]
        stats.soak_parts[job_id] = set()
        # Two traces as rank 0 (a rank of several parts), a third as rank 1; or collector chunks.
        if n % 3 == 2:
            files = [(0, "collector", c) for c in rng.sample(COLLECTOR_CHUNKS, 3)]
        else:
            picks = rng.sample(TRACES, 3)
            files = [(0, "kineto", DATA / picks[0]), (0, "kineto", DATA / picks[1]),
                     (1, "kineto", DATA / picks[2])]  # fmt: skip
        for rank, kind, path in files:
            response, _ = api.call(
                "POST", f"/api/jobs/{job_id}/parts/",
                data={"node": "algo-1", "rank": rank, "kind": kind},
                files={"file": (path.name, path.read_bytes())},
            )  # fmt: skip
            if response is None or response.status_code not in (200, 202):
                note_unexpected(stats, response, f"upload {path.name}")
                continue
            with stats.lock:
                stats.soak_parts[job_id].add(response.json()["id"])
                stats.uploads += 1
        time.sleep(pause_s)


def note_unexpected(stats: Stats, response: requests.Response | None, what: str) -> None:
    if response is not None and response.status_code < 500:
        with stats.lock:
            stats.unexpected_4xx.append(f"{what}: {response.status_code} {response.text[:200]}")


def reader(api: Api, index: int, deadline: float, stats: Stats) -> None:
    rng = random.Random(1000 + index)
    parsed: list[int] = []
    for n in itertools.count():
        if time.monotonic() >= deadline or n >= 100_000:
            return
        if n % 5 == 0 or not parsed:
            response, elapsed = api.call("GET", "/api/jobs/", params={"ordering": "-created_at"})
            record(stats, response, elapsed, "job list")
            if response is not None and response.status_code == 200:
                parsed = [j["id"] for j in response.json()["results"] if j["parts_done"]]
            if not parsed:
                time.sleep(0.5)
                continue
        job_id = rng.choice(parsed)
        for path in ("dashboard", "summary", "timeline/tracks", "insights"):
            response, elapsed = api.call("GET", f"/api/jobs/{job_id}/{path}/")
            record(stats, response, elapsed, path)


def record(stats: Stats, response: requests.Response | None, elapsed: float, what: str) -> None:
    if response is None:
        return
    with stats.lock:
        stats.reader_ms.append(elapsed * 1000)
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
                "POST", f"/api/jobs/{job_id}/parts/",
                data=source, files={"file": (case.filename, case.data)},
            )  # fmt: skip
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


def sample_rss(pid: int, stop: threading.Event, stats: Stats) -> None:
    while not stop.wait(0.25):
        try:
            root = psutil.Process(pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        sizes = {}
        for process in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                sizes[process.pid] = process.memory_info().rss
        if sum(sizes.values()) > stats.peak_rss_bytes:
            stats.peak_rss_bytes = sum(sizes.values())
            stats.peak_rss_by_pid = sizes


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


# --- the server ----------------------------------------------------------------------------


class Server:
    """web, worker and beat as ``profiler-app`` runs them, each in its own process group."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="soak-"))
        self.env, self.drop = database_env("profiler_soak")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.env.update(
            PROFILER_DATA_DIR=str(self.work / "data"),
            CELERY_QUEUE_PREFIX=f"soak{os.getpid()}-",
            HEALTH_WORKERS_SECONDS="5",
            # The sweep is part of "every part ends": let it act within the drain time.
            INGEST_STALL_SECONDS=str(args.stall_seconds),
            INGEST_SWEEP_SECONDS="15",
            TRACE_MAX_DECOMPRESSED_BYTES=str(args.max_decompressed_mb << 20),
            WEB_CONCURRENCY=str(args.web_workers),
            WORKER_CONCURRENCY=str(args.worker_concurrency),
            DJANGO_SETTINGS_MODULE="profiler_app.settings",
            PYTHONPATH=str(ROOT),
        )
        self.url = f"http://127.0.0.1:{self.port}"
        self.processes: dict[str, subprocess.Popen] = {}
        # Kept after the run (the next run replaces them).
        self.logs = ROOT / "var" / "bench" / "soak-logs"
        shutil.rmtree(self.logs, ignore_errors=True)
        self.logs.mkdir(parents=True)

    def start(self) -> None:
        for role in ("worker", "beat", "web"):
            log = (self.logs / f"{role}.log").open("wb")
            self.processes[role] = subprocess.Popen(
                [sys.executable, "-m", "profiler_app.cli", role, "--port", str(self.port)],
                env=self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{self.url}/api/health/", timeout=2).json().get("workers"):
                    return
            except (requests.RequestException, ValueError):
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the server did not become healthy; see {self.logs}")

    def token(self) -> str:
        code = (
            "from django.contrib.auth import get_user_model;"
            "from profiler_app.accounts.logic import issue_token;"
            "user = get_user_model().objects.create_user('soak', password=None);"
            "print(issue_token(user, 'soak')[1])"
        )
        done = subprocess.run(
            [sys.executable, "-m", "django", "shell", "-c", code],
            env=self.env, cwd=ROOT, capture_output=True, text=True, check=True,
        )  # fmt: skip
        return done.stdout.strip().splitlines()[-1]

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for process in self.processes.values():
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.drop()
        shutil.rmtree(self.work, ignore_errors=True)
        # Its queues (tasks still queued at the end), their bindings and its cache keys.
        url = self.env["REDIS_URL"].replace("redis+socket://", "unix://", 1)
        broker = redis.Redis.from_url(url)
        prefix = self.env["CELERY_QUEUE_PREFIX"]
        for pattern in (f"{prefix}*", f"_kombu.binding*.{prefix}*"):
            for key in broker.scan_iter(pattern):
                broker.delete(key)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=60, help="seconds of traffic")
    parser.add_argument("--uploaders", type=int, default=4)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--upload-pause", type=float, default=2.0, help="seconds between jobs")
    parser.add_argument("--drain-timeout", type=float, default=300)
    parser.add_argument("--url", help="a running server (then --token and --worker-pid)")
    parser.add_argument("--token", help="an API token on the --url server")
    parser.add_argument("--worker-pid", type=int, help="the worker's pid on the --url server")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--worker-concurrency", type=int, default=2)
    parser.add_argument("--stall-seconds", type=int, default=120)
    parser.add_argument("--max-decompressed-mb", type=int, default=256)
    args = parser.parse_args()
    if args.url and not (args.token and args.worker_pid):
        parser.error("--url needs --token and --worker-pid")

    work = Path(tempfile.mkdtemp(prefix="soak-cases-"))
    server = None
    try:
        cases = list(hostile_cases(work))
        print(f"{len(cases)} hostile cases ready", flush=True)
        if args.url:
            url, token, worker_pid = args.url, args.token, args.worker_pid
        else:
            server = Server(args)
            token = server.token()
            server.start()
            url, worker_pid = server.url, server.processes["worker"].pid
            print(f"server at {url}, logs in {server.logs}", flush=True)
        run(args, url, token, worker_pid, cases)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if server is not None:
            server.stop()


def run(
    args: argparse.Namespace, url: str, token: str, worker_pid: int, cases: list[Hostile]
) -> None:
    stats = Stats()
    stop_sampling = threading.Event()
    sampler = threading.Thread(target=sample_rss, args=(worker_pid, stop_sampling, stats))
    sampler.start()
    deadline = time.monotonic() + args.duration
    threads = (
        [
            threading.Thread(
                target=uploader,
                args=(Api(url, token, stats), i, deadline, args.upload_pause, stats),
            )
            for i in range(args.uploaders)
        ]
        + [
            threading.Thread(target=reader, args=(Api(url, token, stats), i, deadline, stats))
            for i in range(args.readers)
        ]
        + [
            threading.Thread(
                target=hostile_feeder, args=(Api(url, token, stats), cases, deadline, stats)
            )
        ]
    )
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(args.duration + 600)
    print(f"traffic over: {stats.uploads} uploads, {len(stats.reader_ms)} reads, "
          f"{stats.hostile_cases} hostile cases; waiting for parts to end", flush=True)  # fmt: skip

    api = Api(url, token, stats)
    drain_deadline = time.monotonic() + args.drain_timeout
    while True:
        soak_left, soak_parts = unfinished(api, stats.soak_parts)
        hostile_left, hostile_parts = unfinished(api, stats.hostile_parts)
        if not (soak_left or hostile_left) or time.monotonic() > drain_deadline:
            break
        print(f"  unfinished: {soak_left} soak, {hostile_left} hostile", flush=True)
        time.sleep(5)
    stop_sampling.set()
    sampler.join()
    soak_insights = insights(
        api, list(stats.soak_parts), max(drain_deadline, time.monotonic() + 60)
    )
    hostile_insights = insights(api, list(stats.hostile_parts), time.monotonic() + 30)
    report(
        stats, soak_left, soak_parts, hostile_left, hostile_parts, soak_insights, hostile_insights
    )


def report(
    stats: Stats,
    soak_left: int,
    soak_parts: dict[int, dict],
    hostile_left: int,
    hostile_parts: dict[int, dict],
    soak_insights: dict[int, dict],
    hostile_insights: dict[int, dict],
) -> None:
    """What went wrong, in a few lines; every hostile case's outcome in a file; then RESULT."""
    states = Counter(p["state"] for p in soak_parts.values())
    print(f"soak parts: {dict(states)}; insights of the soak jobs: "
          f"{dict(Counter(i.get('status') for i in soak_insights.values()))}, of the hostile jobs: "
          f"{dict(Counter(i.get('status') for i in hostile_insights.values()))}")  # fmt: skip
    for part in [p for p in soak_parts.values() if p["state"] == "failed"][:5]:
        print(f"  soak part {part['id']} ({part['original_name']}) failed: {part['error'][:200]}")
    for job_id, found in {**soak_insights, **hostile_insights}.items():
        if found.get("status") not in ("done", "no_data"):
            print(
                f"  insights of job {job_id}: {found.get('status')} {found.get('error', '')[:200]}"
            )
    hostile_states = Counter(p["state"] for p in hostile_parts.values())
    print(f"hostile answers: {dict(sorted(stats.hostile_answers.items()))}; hostile parts: "
          f"{dict(hostile_states)}")  # fmt: skip
    outcomes = ROOT / "var" / "bench" / "soak-hostile.tsv"
    outcomes.parent.mkdir(parents=True, exist_ok=True)
    with outcomes.open("w") as out:
        for part_id, name in stats.hostile_names.items():
            part = hostile_parts.get(part_id, {})
            error = part.get("error") or part.get("warning") or ""
            out.write(f"{name!r}\t{part.get('state')}\t{error!r}\n")
            if any(words in error for words in INTERNAL_FAILURE):
                print(f"  hostile case {name!r} failed inside the server: {error[:200]}")
        for name, code, detail in stats.hostile_refused:
            out.write(f"{name!r}\t{code}\t{detail!r}\n")
    print(f"every hostile case's outcome: {outcomes}")
    print(
        "worker tree at its peak (pid: MB): "
        + ", ".join(f"{pid}: {rss / 2**20:.0f}" for pid, rss in stats.peak_rss_by_pid.items())
    )
    for line in stats.errors[:10]:
        print(f"  error: {line}")
    for line in stats.unexpected_4xx[:10]:
        print(f"  unexpected answer: {line}")
    p95 = float(np.percentile(stats.reader_ms, 95)) if stats.reader_ms else float("nan")
    print(
        f"RESULT soak_errors={len(stats.errors)} soak_parts_unfinished={soak_left} "
        f"soak_p95_ms={p95:.0f} hostile_cases={stats.hostile_cases} "
        f"hostile_stuck={hostile_left} worker_peak_rss_mb={stats.peak_rss_bytes / 2**20:.0f}"
    )


if __name__ == "__main__":
    main()
