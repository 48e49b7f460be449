"""Cost of a trace's shape: many tracks, or one long thread (issue 31, point 3).

For each synthetic trace (``tests.traces.synthetic``), runs the whole worker-side parse of a
part, ``ingest_trace`` then ``build_index``, in a fresh process under the worker's memory
ceiling (``lib.memory.limit_memory``), and prints its seconds and peak RSS.

Usage: ``python bench/tracks.py [--tracks 12500 200000] [--pids 200000]
[--single-thread 18000000] [--depth 8] [--ceiling-mb 8192]``. The last line is
machine-readable, for the largest input of each shape::

    RESULT tracks=<n> tracks_s=<s> tracks_peak_mb=<n> single_thread=<n> single_thread_s=<s> ...
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.traces.synthetic import many_tracks, one_thread  # noqa: E402

# Runs in a fresh process: the parse of one part, as a pool process runs it.
PARSE = r"""
import json, sys, time
def peak_rss_mb():  # this process's own peak: ru_maxrss also counts the parent's at fork
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) / 1024
from profiler_app.lib.memory import limit_memory
limit_memory(int(sys.argv[3]))
from profiler_app.timeline.pure.index_build import build_index
from profiler_app.traces import ingest_trace
start = time.perf_counter()
try:
    result = ingest_trace(sys.argv[1], "kineto", sys.argv[2] + "/store")
    build_index(sys.argv[2] + "/store", sys.argv[2] + "/index")
    outcome = {"events": result.store.n_events, "tracks": len(result.store.tracks)}
except MemoryError:
    outcome = {"error": "MemoryError"}
outcome["seconds"] = time.perf_counter() - start
outcome["rss_mb"] = peak_rss_mb()
print(json.dumps(outcome))
"""


def measure(path: Path, ceiling_mb: int) -> dict:
    with tempfile.TemporaryDirectory() as work:
        done = subprocess.run(
            [sys.executable, "-c", PARSE, str(path), work, str(ceiling_mb)],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()
        return {"error": f"exit status {done.returncode}: {tail[-1] if tail else ''}"}
    return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tracks", type=int, nargs="*", default=[12_500, 200_000])
    parser.add_argument("--pids", type=int, nargs="*", default=[200_000])
    parser.add_argument("--single-thread", type=int, nargs="*", default=[])
    parser.add_argument("--depth", type=int, default=8, help="nesting of the single thread")
    parser.add_argument("--ceiling-mb", type=int, default=8192)
    parser.add_argument("--work", type=Path, default=ROOT / "var" / "bench")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)

    cases = [(f"tid-{n}", lambda p, n=n: many_tracks(p, n, "tid")) for n in args.tracks]
    cases += [(f"pid-{n}", lambda p, n=n: many_tracks(p, n, "pid")) for n in args.pids]
    cases += [
        (f"thread-{n}-d{args.depth}", lambda p, n=n: one_thread(p, n, args.depth))
        for n in args.single_thread
    ]
    print(f"{'trace':24} {'MB gz':>7} {'events':>10} {'tracks':>8} {'s':>8} {'peak MB':>8}")
    result = []
    for name, make in cases:
        path = args.work / f"{name}.json.gz"
        if not path.exists():
            started = time.perf_counter()
            make(path)
            print(f"  (wrote {path.name} in {time.perf_counter() - started:.0f} s)")
        out = measure(path, args.ceiling_mb)
        size = path.stat().st_size / 1e6
        if "error" in out:
            print(f"{name:24} {size:7.1f} failed: {out['error']}")
            result.append(f"{name}_error=1")
            continue
        print(
            f"{name:24} {size:7.1f} {out['events']:10d} {out['tracks']:8d} "
            f"{out['seconds']:8.2f} {out['rss_mb']:8.0f}"
        )
        result.append(f"{name}_s={out['seconds']:.2f} {name}_peak_mb={out['rss_mb']:.0f}")
    print("RESULT " + " ".join(result))


if __name__ == "__main__":
    main()
