"""Ingest benchmark: our end-to-end ingest vs Holistic Trace Analysis vs bare decompression.

For every shared trace and a synthetic >= 4M-event trace (the largest shared trace replicated with
shifted timestamps), prints:

* ours: upload done -> aggregates and timeline store committed (the Celery task's code, run in a
  fresh process against a real Postgres database), and that process's peak RSS;
* HTA: ``TraceAnalysis(trace_dir=...)`` loading the same file, in its own process;
* gunzip: streaming zlib decompression of the file, nothing else.

For the synthetic trace, where its parse's time went (the steps the ingest logs), and from
those steps what two workers could give it if its read were cut in two with every later step
left to one final task (``read_split_ceiling_2w``). Then the synthetic trace twice at once,
each part in its own process (two workers): how many times one part's work per second two
workers get through on this machine, the most that cutting one part in two could give.

Usage: ``python bench/ingest.py [--copies 62] [--hta-timeout 1800] [--skip-hta]``. The last line
is machine-readable, for the largest input::

    RESULT ingest_vs_hta=<x> ingest_vs_gunzip=<x> peak_rss_mb=<n> events=<n> two_parts_speedup_2w=<x>
        read_split_ceiling_2w=<x>

Uses DATABASE_URL when set, else the embedded PostgreSQL under var/ (as ``manage.py`` does); the
benchmark creates and drops its own database. HTA must be importable (``pip install
holistictraceanalysis``); with ``--hta-python`` it can live in another virtualenv.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SHARED = [
    "cpu_only_rank34.pt.trace.json.gz",
    "amd_mi250_small.json.gz",
    "multirank_sampled/rank-0.json.gz",
    "multirank_sampled/rank-1.json.gz",
    "nccl_rank0.json.gz",
    "gpu_training_rank0.pt.trace.json.gz",
]
LARGEST_SHARED = "gpu_training_rank0.pt.trace.json.gz"
SYNTHETIC_SHIFT_US = 10**6  # each copy starts one second after the previous one
_TS = re.compile(rb'("ts": )(-?\d+)')
_IDS = re.compile(rb'("(?:id|correlation|External id)": )(\d+)')

# Runs in a fresh process: the ingest task on one part, then prints its numbers as JSON.
OURS = r"""
import json, os, sys, time
def peak_rss_mb():  # this process's own peak: ru_maxrss also counts the parent's at fork
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) / 1024
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "profiler_app.settings")
import django
django.setup()
from django.contrib.auth import get_user_model
from django.core.files import File
from profiler_app.core.models import Node, ProfilePart, TrainingJob
from profiler_app.profiles.models import PartSummary
from profiler_app.ingest.tasks import ingest_part

path = sys.argv[1]
user, _ = get_user_model().objects.get_or_create(username="bench")
job = TrainingJob.objects.create(name=f"bench-{time.time_ns()}", owner=user)
node = Node.objects.create(job=job, name="algo-1")
# The upload (not timed): stored like the API stores it, but not queued to any worker.
part = ProfilePart(job=job, node=node, rank=0, kind="kineto", original_name=os.path.basename(path),
                   size_bytes=os.path.getsize(path), sha256=str(time.time_ns()))
with open(path, "rb") as f:
    part.file.save(os.path.basename(path), File(f), save=True)
ingest_part.app.finalize()  # a running worker did this at start-up
import logging
steps = []  # where the parse's time went, as its log line says
class Steps(logging.Handler):
    def emit(self, record):
        if " parsed (" in record.getMessage():
            steps.append(record.getMessage().split(": ", 1)[1])
logging.getLogger("profiler_app.ingest.logic").addHandler(Steps())
logging.getLogger("profiler_app.ingest.logic").setLevel(logging.INFO)
if len(sys.argv) > 2:  # one of several at once: all start together (``at_once``)
    barrier = sys.argv[2]
    open(os.path.join(barrier, f"ready-{os.getpid()}"), "w").close()
    while not os.path.exists(os.path.join(barrier, "go")):
        time.sleep(0.01)
began = time.time()
start, cpu = time.perf_counter(), time.process_time()
ingest_part.apply(args=[part.id])
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
ended = time.time()
part.refresh_from_db()
summary = PartSummary.objects.filter(part=part).first()
print(json.dumps({
    "seconds": elapsed,
    "began": began,
    "ended": ended,
    "cpu_seconds": cpu,
    "rss_mb": peak_rss_mb(),
    "state": part.state,
    "error": part.error,
    "events": summary.n_events if summary else 0,
    "steps": steps[0] if steps else "",
}))
"""

HTA = r"""
import json, logging, sys, time
def peak_rss_mb():  # this process's own peak: ru_maxrss also counts the parent's at fork
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) / 1024
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
start = time.perf_counter()
analysis = TraceAnalysis(trace_dir=sys.argv[1])
elapsed = time.perf_counter() - start
rows = sum(len(df) for df in analysis.t.traces.values())
print(json.dumps({"seconds": elapsed, "rows": rows,
                  "rss_mb": peak_rss_mb()}))
"""


def synthesize(source: Path, copies: int, target: Path) -> Path:
    """``copies`` copies of the source trace's events, each shifted one second later and with
    ids/correlations made distinct, in one gzip file (streamed: never whole in memory)."""
    if target.exists():
        return target
    with gzip.open(source) as f:
        text = f.read()
    events = bytes(msgspec.json.decode(text, type=dict[str, msgspec.Raw])["traceEvents"])
    at = text.index(events)
    head, body, tail = text[: at + 1], events[1:-1].strip(), text[at + len(events) - 1 :]
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        packer = zlib.compressobj(6, zlib.DEFLATED, 31)
        out.write(packer.compress(head))
        for k in range(copies):
            shifted = _TS.sub(_adder(k * SYNTHETIC_SHIFT_US), body)
            shifted = _IDS.sub(_adder(k * 10**7), shifted)
            out.write(packer.compress((b"," if k else b"") + shifted))
        out.write(packer.compress(tail))
        out.write(packer.flush())
    partial.rename(target)
    return target


def _adder(delta: int):
    """re.sub replacement adding ``delta`` to the number in group 2."""
    return lambda m: m.group(1) + str(int(m.group(2)) + delta).encode()


def gunzip(path: Path) -> tuple[float, int]:
    """Seconds to decompress ``path`` (streaming, bounded memory) and its decompressed size."""
    start = time.perf_counter()
    size = 0
    inflater = zlib.decompressobj(31)
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            while block:
                size += len(inflater.decompress(block, 16 << 20))
                block = inflater.unconsumed_tail
    return time.perf_counter() - start, size


def run_json(cmd: list[str], env: dict[str, str], timeout: float) -> dict:
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f}s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        output = (done.stderr or done.stdout).strip().splitlines()
        return {"error": output[-1] if output else f"exit status {done.returncode}"}
    return json.loads(lines[-1])


def at_once(path: Path, env: dict[str, str], processes: int, timeout: float) -> list[dict]:
    """The ingest task on ``processes`` parts (copies of ``path``) at the same time, each in
    its own process as a worker runs it: each one stores its upload, then all start together."""
    with tempfile.TemporaryDirectory() as barrier:
        cmd = [sys.executable, "-c", OURS, str(path), barrier]
        runs = [
            subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
            for _ in range(processes)
        ]
        deadline = time.monotonic() + timeout
        while len([n for n in os.listdir(barrier) if n.startswith("ready-")]) < processes:
            if time.monotonic() > deadline or any(r.poll() is not None for r in runs):
                break
            time.sleep(0.05)
        Path(barrier, "go").touch()
        outputs = [r.communicate(timeout=timeout)[0] for r in runs]
    return [json.loads([x for x in out.splitlines() if x.startswith("{")][-1]) for out in outputs]


def two_parts_speedup(path: Path, env: dict[str, str], alone_s: float) -> float:
    """What two workers of this machine give at most: two parts as large as ``path`` parsed at
    once, against one part alone (``alone_s``); a part cut in two for two workers does the same
    work, and more to merge its halves."""
    pair = at_once(path, env, 2, timeout=3600)
    pair_s = max(p["ended"] for p in pair) - min(p["began"] for p in pair)
    each = ", ".join(f"{p['seconds']:.2f} s" for p in pair)
    rss_each = ", ".join(f"{p['rss_mb']:.0f}" for p in pair)
    speedup = 2 * alone_s / pair_s
    print(
        f"two parts at once, one worker each: {pair_s:.2f} s (each {each}; RSS {rss_each} MB)"
        f" against one part alone {alone_s:.2f} s: {speedup:.2f}x the work per second"
    )
    return speedup


def read_split_ceiling(steps: str) -> float:
    """What two workers could give one part cut in two by its read (the shards a byte range of
    its events each, one final task merging them into its store, index and aggregates): the
    part's own time against half its read plus every step after it, from where its parse's
    time went (the ingest's log line, ``steps``), before any cost of the cut itself."""
    # "events read 9.0 s, store written 3.2 s, ...": each step's name and seconds.
    took = {
        name: float(seconds) for name, seconds, _ in (s.rsplit(" ", 2) for s in steps.split(", "))
    }
    read = took.pop("events read")
    return (read + sum(took.values())) / (read / 2 + sum(took.values()))


def database_env(name: str) -> tuple[dict[str, str], Callable[[], None]]:
    """Environment for a fresh, migrated benchmark database (and a function to drop it)."""
    sys.path.insert(0, str(ROOT))
    from profiler_app.embedded import use_embedded_services_if_unconfigured

    use_embedded_services_if_unconfigured()
    import psycopg

    url = os.environ["DATABASE_URL"]
    admin = psycopg.connect(url, autocommit=True)
    admin.execute(f"DROP DATABASE IF EXISTS {name}")
    admin.execute(f"CREATE DATABASE {name}")
    env = dict(os.environ)
    head, _, query = url.partition("?")
    env["DATABASE_URL"] = head.rsplit("/", 1)[0] + f"/{name}" + (f"?{query}" if query else "")
    env["PROFILER_MEDIA_ROOT"] = tempfile.mkdtemp(prefix="bench-media-")
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], env=env, cwd=ROOT, check=True
    )

    def drop() -> None:
        shutil.rmtree(env["PROFILER_MEDIA_ROOT"], ignore_errors=True)
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    return env, drop


def in_bench_database(name: str, run: Callable[[], None]) -> None:
    """``run()`` with Django set up on a fresh, migrated benchmark database ``name`` (dropped
    afterwards, whatever happens)."""
    env, drop = database_env(name)
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "profiler_app.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    try:
        run()
    finally:
        from django.db import connections

        connections.close_all()
        drop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--copies", type=int, default=62, help="copies in the synthetic trace")
    parser.add_argument("--work", type=Path, default=ROOT / "var" / "bench")
    parser.add_argument("--hta-python", default=sys.executable)
    parser.add_argument("--hta-timeout", type=float, default=1800)
    parser.add_argument("--skip-hta", action="store_true")
    args = parser.parse_args()

    args.work.mkdir(parents=True, exist_ok=True)
    synthetic = synthesize(
        DATA / LARGEST_SHARED, args.copies, args.work / f"synthetic-x{args.copies}.pt.trace.json.gz"
    )
    inputs = [DATA / name for name in SHARED] + [synthetic]
    env, drop = database_env("profiler_bench")
    header = f"{'trace':42} {'MB json':>8} {'events':>9} {'ours s':>8} {'cpu s':>7} {'RSS MB':>7} {'HTA s':>8} {'HTA MB':>7} {'gunzip s':>9} {'vs HTA':>7} {'vs gunzip':>9}"
    print(header)
    print("-" * len(header))
    last, alone_s, two_parts, read_ceiling = None, None, float("nan"), float("nan")
    try:
        for path in inputs:
            seconds_gunzip, json_bytes = gunzip(path)
            ours = run_json([sys.executable, "-c", OURS, str(path)], env, timeout=3600)
            if ours.get("state") != "done":
                print(f"{path.name:42} ours failed: {ours.get('error') or ours}")
                continue
            hta: dict = {"seconds": float("nan"), "rss_mb": float("nan")}
            if not args.skip_hta:
                with tempfile.TemporaryDirectory() as trace_dir:
                    os.symlink(path, Path(trace_dir) / path.name)
                    hta = run_json([args.hta_python, "-c", HTA, trace_dir], env, args.hta_timeout)
                    hta.setdefault("seconds", float("nan"))
                    hta.setdefault("rss_mb", float("nan"))
            vs_hta = hta["seconds"] / ours["seconds"]
            vs_gunzip = ours["seconds"] / seconds_gunzip
            print(
                f"{path.name:42} {json_bytes / 1e6:8.1f} {ours['events']:9d} {ours['seconds']:8.2f} "
                f"{ours['cpu_seconds']:7.2f} {ours['rss_mb']:7.0f} {hta['seconds']:8.2f} {hta['rss_mb']:7.0f} {seconds_gunzip:9.3f} "
                f"{vs_hta:6.1f}x {vs_gunzip:8.1f}x"
            )
            if path == synthetic:
                print(f"  where its parse's time went: {ours['steps']}")
                read_ceiling = read_split_ceiling(ours["steps"])
                print(
                    "  cut in two by its read, the rest left to one final task: at most"
                    f" {read_ceiling:.2f}x with two workers"
                )
            last = (vs_hta, vs_gunzip, ours["rss_mb"], ours["events"])
            alone_s = ours["seconds"] if path == synthetic else None
        if alone_s is not None:
            two_parts = two_parts_speedup(synthetic, env, alone_s)
    finally:
        drop()
    if last is not None:
        vs_hta, vs_gunzip, rss, events = last
        print(
            f"RESULT ingest_vs_hta={vs_hta:.1f} ingest_vs_gunzip={vs_gunzip:.2f} peak_rss_mb={rss:.0f} events={events}"
            f" two_parts_speedup_2w={two_parts:.2f} read_split_ceiling_2w={read_ceiling:.2f}"
        )


if __name__ == "__main__":
    main()
