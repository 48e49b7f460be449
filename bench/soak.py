"""Soak and hostile-input benchmark against a real server: nothing stuck, no 5xx, bounded memory.

Starts web (gunicorn), a Celery worker and beat on 127.0.0.1 with a fresh database (or uses a
running server with ``--url`` and ``--token``), creates a user and an API token, then for
``--duration`` seconds runs:

* N uploader threads: each creates jobs and uploads real traces from ``tests/data`` as their
  parts (``POST /api/jobs/``, ``POST /api/jobs/{id}/parts/``), two of them as one rank;
* M reader threads: the job list, then the dashboard, summary, timeline tracks and insights of a
  job with parsed parts;
* one hostile thread: ≥ 200 broken or malicious uploads, variants of the families in
  ``tests/traces/test_hostile_input.py`` and ``tests/ingest/test_robustness.py`` (truncated and
  corrupt gzip, invalid JSON, wrong types, deep nesting, gzip and zip/npy bombs, crafted repeated
  headers, NUL and over-long names, out-of-range base times, wrong kinds, empty files, odd
  file names). A 4xx answer is fine; a part it creates must end, failed or done.

Then it waits (at most ``--drain-timeout``) for every part to end, and prints, last::

    RESULT soak_errors=<n> soak_parts_unfinished=<n> soak_p95_ms=<n> hostile_cases=<n>
    hostile_stuck=<n> worker_peak_rss_mb=<n>

soak_errors counts 5xx answers and connection errors of every request; worker_peak_rss_mb is the
peak summed RSS of the worker's process tree (sampled with psutil every 0.25 s).

    .venv/bin/python bench/soak.py [--duration 60] [--uploaders 4] [--readers 4]

Uses DATABASE_URL / REDIS_URL when set (else the embedded services, as ``manage.py`` does); the
benchmark creates and drops its own database and uses its own queue names and data folder.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import itertools
import json
import os
import random
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psutil
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import DATA, ROOT, database_env  # noqa: E402

sys.path.insert(0, str(ROOT))
from tests.traces.test_hostile_input import (  # noqa: E402
    EVENT,
    npy_bomb,
    repeated_key_in_nested_objects,
    repeated_key_in_values,
    trace_bytes,
)

TRACES = [
    "cpu_only_rank34.pt.trace.json.gz",
    "amd_mi250_small.json.gz",
    "multirank_sampled/rank-0.json.gz",
    "multirank_sampled/rank-1.json.gz",
    "h100_cnn_kineto.json.gz",
    "nccl_rank0.json.gz",
    "resnet50_pt18_workers4.pt.trace.json.gz",
    "gpu_training_rank0.pt.trace.json.gz",
]
COLLECTOR_CHUNKS = sorted((DATA / "h100_collector").glob("chunk-*.pcol"))
FINAL = ("done", "failed")
REQUEST_TIMEOUT_S = 60
HOSTILE_PER_JOB = 40


@dataclass
class Hostile:
    name: str
    data: bytes
    kind: str = "kineto"
    filename: str = "trace.json"


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


# --- hostile inputs ------------------------------------------------------------------------


def long_name(n: int, seed: int) -> str:
    return "".join(random.Random(seed).choices(string.ascii_letters, k=n))  # incompressible


def deep(depth: int, opener: bytes = b"[", closer: bytes = b"]") -> bytes:
    text = trace_bytes([EVENT, {**EVENT, "args": {"x": "DEEP"}}])
    return text.replace(b'"DEEP"', opener * depth + closer * depth)


def event_bomb(decompressed_mb: int) -> bytes:
    """Valid events repeated in gzip members: ~1000x smaller than what they inflate to."""
    events = (json.dumps(EVENT) + ", ").encode() * 20_000  # ~2.6 MB
    member = gzip.compress(events)
    return gzip.compress(b'{"traceEvents": [') + member * max(1, decompressed_mb * 10 // 26)


def zeros_bomb(gib: float) -> bytes:
    return zlib.compress(b"\0" * (1 << 20), wbits=31) * int(gib * 1024)


def hostile_cases(work: Path) -> Iterator[Hostile]:
    """≥ 200 cases: each family of the tests, in variants."""
    real = {name: (DATA / name).read_bytes() for name in TRACES[:6]}
    for (name, data), cut in itertools.product(
        real.items(), (0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999)
    ):
        yield Hostile(f"truncated {name} at {cut:.1%}", data[: int(len(data) * cut)], filename=name)
    for (name, data), at in itertools.product(real.items(), (0.05, 0.3, 0.7)):
        broken = bytearray(data)
        start = max(20, int(len(data) * at))
        broken[start : start + 100] = b"\xff" * 100
        yield Hostile(f"corrupt gzip {name} at {at:.0%}", bytes(broken), filename=name)
    for i, text in enumerate(
        [
            b'{"traceEvents": [{"ph": "X", "ts": 1,, "dur": 1}]}',
            b'{"traceEvents": [{"ph": "X",, }]}',
            b'{"traceEvents": [',
            b'{"traceEvents": [{"ph": "X"}',
            b'{"traceEvents": }',
            b'{"traceEvents": [1, 2, 3',
            b"{",
            b"[",
            b'{"traceEvents": [], "x": }',
            trace_bytes([EVENT])[:-1] + b', "x": }',
            trace_bytes([EVENT])[:-2],
            trace_bytes([EVENT]).replace(b'"ts"', b"ts"),
            b'{"traceEvents": ["\xff\xfe"]}',
            b'{"traceEvents": [{"name": "\\ud800"}]}',
        ]
    ):
        yield Hostile(f"invalid JSON #{i}", text)
    for i, doc in enumerate(
        [{"lr": 0.1, "epochs": 3}, {"model": "resnet", "epochs": [1, 2]}, [], 42, "trace", None,
         {"traceEvents": 7}, {"traceEvents": "many"}, {"traceEvents": {}}, {"TraceEvents": []}]
    ):  # fmt: skip
        yield Hostile(f"not a trace #{i}", json.dumps(doc).encode())
    for i, text in enumerate(
        [b"epoch 1 loss 0.3\n", b"\x00" * 1000, os.urandom(4096), b"PK\x03\x04garbage",
         b"\x1f\x8bnot gzip", b"\xef\xbb\xbf", b" " * 10_000]
    ):  # fmt: skip
        yield Hostile(f"not JSON #{i}", text)
    yield Hostile("empty file", b"")
    yield Hostile("empty gzip", gzip.compress(b""), filename="t.json.gz")
    yield Hostile("no events", trace_bytes([]))
    changes = [
        {"ts": "yesterday"}, {"ts": None}, {"ts": [1]}, {"dur": "long"}, {"dur": {}},
        {"name": 12}, {"name": None}, {"args": [1, 2]}, {"args": {"stream": [7]}},
        {"args": {"device": "gpu"}}, {"pid": "x"}, {"tid": 1.5e300}, {"ph": 5}, {"cat": []},
    ]  # fmt: skip
    for change in changes:
        yield Hostile(f"wrong type {change}", trace_bytes([EVENT, {**EVENT, **change}]))
    for i, bad in enumerate([42, "x", None, [EVENT], True]):
        yield Hostile(f"event not an object #{i}", trace_bytes([EVENT, bad]))
    for dur in ("-5", "-1e300", "NaN", "Infinity", "1e999", "-0.5"):
        text = trace_bytes([EVENT, {**EVENT, "dur": 123456789}])
        yield Hostile(f"duration {dur}", text.replace(b"123456789", dur.encode()))
    for ts in ("1e999", "-1e300", "9223372036854775808", "NaN"):
        text = trace_bytes([EVENT, {**EVENT, "ts": 123456789}])
        yield Hostile(f"timestamp {ts}", text.replace(b"123456789", ts.encode()))
    for depth, (opener, closer) in itertools.product(
        (600, 2_000, 10_000, 100_000), ((b"[", b"]"), (b'{"a":', b"}"))
    ):
        yield Hostile(f"nesting {depth} {opener!r}", deep(depth, opener, closer))
    yield Hostile("nesting 100000 gzip", gzip.compress(deep(100_000)), filename="t.json.gz")
    for gib in (0.5, 1, 2, 4):
        yield Hostile(f"gzip of {gib} GiB zeros", zeros_bomb(gib), filename="zeros.json.gz")
    for mb in (300, 600):
        yield Hostile(f"gzip bomb of {mb} MB events", event_bomb(mb), filename="bomb.json.gz")
    for n in (10_000, 40_000, 160_000, 320_000):
        yield Hostile(
            f"repeated header x{n}", gzip.compress(repeated_key_in_values(n)), filename="h.json.gz"
        )
    for n in (10_000, 40_000):
        yield Hostile(
            f"nested repeated header x{n}",
            gzip.compress(repeated_key_in_nested_objects(n)),
            filename="h.json.gz",
        )
    annotation = {**EVENT, "cat": "user_annotation", "tid": 1}
    for where, (i, name) in itertools.product(
        ("kernel", "annotation", "traceName", "cat", "args"),
        enumerate(["nul\u0000k", "\u0000", "a\u0000" * 50]),
    ):
        if where == "kernel":
            doc = {"traceEvents": [{**EVENT, "name": name}]}
        elif where == "annotation":
            doc = {"traceEvents": [EVENT, {**annotation, "name": name}]}
        elif where == "traceName":
            doc = {"traceEvents": [EVENT], "traceName": name}
        elif where == "cat":
            doc = {"traceEvents": [EVENT, {**EVENT, "cat": name}]}
        else:
            doc = {"traceEvents": [{**EVENT, "args": {name: name, "stream": 7}}]}
        yield Hostile(f"NUL in {where} #{i}", json.dumps(doc).encode())
    for where, n in itertools.product(
        ("kernel", "annotation", "traceName"), (2_800, 8_000, 200_000)
    ):
        name = long_name(n, n)
        if where == "kernel":
            doc = {"traceEvents": [{**EVENT, "name": name}]}
        elif where == "annotation":
            doc = {"traceEvents": [EVENT, {**annotation, "name": name}]}
        else:
            doc = {"traceEvents": [EVENT], "traceName": name}
        yield Hostile(f"{n}-character name in {where}", json.dumps(doc).encode())
    for base in (2**63 - 1, 2**63, -(2**63), -1, 2**64, 4102444800 * 10**9, 1.5e300, "soon", None):
        yield Hostile(
            f"baseTimeNanoseconds {base}",
            json.dumps({"traceEvents": [EVENT], "baseTimeNanoseconds": base}).encode(),
        )
    for declared_mb, stored_mb in ((300, 300), (1024, 1024), (1024, 0), (4096, 0), (2**20, 0)):
        path = npy_bomb(
            work / f"bomb-{declared_mb}-{stored_mb}.pcol", declared_mb << 20, stored_mb << 20
        )
        yield Hostile(f"npy bomb {declared_mb} MB declared, {stored_mb} MB stored",
                      path.read_bytes(), "collector", path.name)  # fmt: skip
    chunk = COLLECTOR_CHUNKS[0].read_bytes()
    for cut in (0.1, 0.5, 0.9):
        yield Hostile(f"truncated chunk at {cut:.0%}", chunk[: int(len(chunk) * cut)],
                      "collector", "chunk.pcol")  # fmt: skip
    for name in TRACES[:3]:
        yield Hostile(f"{name} as a collector chunk", real[name], "collector", "x.pcol")
    for chunk_path in COLLECTOR_CHUNKS[:3]:
        yield Hostile(f"{chunk_path.name} as a kineto trace", chunk_path.read_bytes(),
                      "kineto", chunk_path.name)  # fmt: skip
    for kind in ("", "KINETO", "nsys", "kineto\u0000", "../kineto"):
        yield Hostile(f"kind {kind!r}", trace_bytes([EVENT]), kind)
    for filename in ("a\\b.json", "../../etc/passwd", "x" * 300 + ".json", "new\nline.json",
                     'quote".json', "nul\u0000.json", "résumé ✓.json.gz", ".json", "-"):  # fmt: skip
        yield Hostile(f"file name {filename[:20]!r}", trace_bytes([EVENT]), filename=filename)
    yield Hostile("npz of random arrays", npz_of_random(work), "collector", "r.npz")


def npz_of_random(work: Path) -> bytes:
    path = work / "random.npz"
    np.savez_compressed(path, ev_kind=np.arange(10), other=np.zeros((3, 3)))
    return path.read_bytes()


# --- threads -------------------------------------------------------------------------------


def uploader(api: Api, index: int, deadline: float, pause_s: float, stats: Stats) -> None:
    rng = random.Random(index)
    for n in itertools.count():
        if time.monotonic() >= deadline or n >= 10_000:
            return
        response, _ = api.call("POST", "/api/jobs/", json={"name": f"soak-u{index}-{n}"})
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
                "POST", "/api/jobs/", json={"name": f"hostile-{i // HOSTILE_PER_JOB}"}
            )
            if response is None or response.status_code != 201:
                note_unexpected(stats, response, "create hostile job")
                return
            job_id = response.json()["id"]
            stats.hostile_parts[job_id] = set()
        response, _ = api.call(
            "POST", f"/api/jobs/{job_id}/parts/",
            data={"node": "hostile", "rank": i, "kind": case.kind},
            files={"file": (case.filename, case.data)},
        )  # fmt: skip
        with stats.lock:
            stats.hostile_cases += 1
            if response is not None:
                code = response.status_code
                stats.hostile_answers[code] = stats.hostile_answers.get(code, 0) + 1
                if code in (200, 202):
                    stats.hostile_parts[job_id].add(response.json()["id"])
        left = deadline - time.monotonic()
        time.sleep(max(0.0, min(1.0, left / max(1, len(cases) - i))))


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


def unfinished(api: Api, jobs: dict[int, set[int]]) -> tuple[int, dict[int, str]]:
    """(parts of ``jobs`` not done or failed, part id -> state for every part seen)."""
    states: dict[int, str] = {}
    for job_id in jobs:
        path: str | None = f"/api/jobs/{job_id}/parts/"
        while path:
            response, _ = api.call("GET", path)
            if response is None or response.status_code != 200:
                break
            body = response.json()
            states.update({p["id"]: p["state"] for p in body["results"]})
            path = body["next"][len(api.url) :] if body["next"] else None
    left = sum(1 for ids in jobs.values() for i in ids if states.get(i) not in FINAL)
    return left, states


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
            "from rest_framework.authtoken.models import Token;"
            "user = get_user_model().objects.create_user('soak', password=None);"
            "print(Token.objects.create(user=user).key)"
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
        soak_left, soak_states = unfinished(api, stats.soak_parts)
        hostile_left, hostile_states = unfinished(api, stats.hostile_parts)
        if not (soak_left or hostile_left) or time.monotonic() > drain_deadline:
            break
        print(f"  unfinished: {soak_left} soak, {hostile_left} hostile", flush=True)
        time.sleep(5)
    stop_sampling.set()
    sampler.join()

    soak_failed = sum(1 for s in soak_states.values() if s == "failed")
    hostile_done = sum(1 for s in hostile_states.values() if s == "done")
    print(f"soak parts: {len(soak_states)} ({soak_failed} failed); hostile parts: "
          f"{len(hostile_states)} ({hostile_done} done, the rest failed); hostile answers: "
          f"{dict(sorted(stats.hostile_answers.items()))}")  # fmt: skip
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
