"""Cost of a trace's shape: many tracks, or one long thread (issue 31, point 3).

For each synthetic trace (``tests.traces.synthetic``), runs the whole worker-side parse of a
part, ``ingest_trace`` then ``build_index``, in a fresh process under the worker's memory
ceiling (``lib.memory.limit_memory``), and prints its seconds and peak RSS.

Then, for the many-track shapes, what the web process does with the parsed part (issue 48,
item 2), in another fresh process: opens the part's index and the job's timeline as the first
reader of the job (``open_s``), answers the track tree (``tree_s``, ``tree_bytes``: large groups
collapsed) and again as a second reader (``again_s``), answers the first page of 1,000 children
of the largest collapsed group (``page_s``, ``page_bytes``), and reports its size after
opening (``open_rss_mb``: what it keeps while the job is open) and once the timeline is let
go (``after_rss_mb``).

Usage: ``python bench/tracks.py [--tracks 12500 200000] [--pids 200000]
[--single-thread 18000000] [--depth 8] [--ceiling-mb 8192]``. The last line is
machine-readable, for the largest input of each shape::

    RESULT tid-200000_s=<s> tid-200000_peak_mb=<n> tid-200000_open_s=<s> tid-200000_tree_s=<s>
    tid-200000_tree_bytes=<n> ... pid-200000_s=<s> ...
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

from profiler_app.timeline.pure.index import INDEX_DIR_NAME  # noqa: E402
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

# Runs in a fresh process on the parsed part: what a web process does for the job's readers.
SERVE = r"""
import gc, json, sys, time
from profiler_app.timeline.pure.index import open_built_index
from profiler_app.timeline.pure.query import JobTimeline
from profiler_app.timeline.pure.tree import Part
from profiler_app.lib.memory import hand_back_freed
from profiler_app.traces.store_files import StoreFiles
def rss_mb():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("VmRSS:")) / 1024
def answer(body):  # as the view sends it: JSON text
    return len(json.dumps(body, separators=(",", ":")).encode())
def collapsed(nodes):
    for node in nodes:
        if "children_count" in node:
            yield node
        yield from collapsed(node.get("children", []))
out = {"base_rss_mb": rss_mb()}
start = time.perf_counter()
timeline = JobTimeline([Part(1, "algo-1", 0, None, open_built_index(StoreFiles(sys.argv[1])))])
out["open_s"] = time.perf_counter() - start
hand_back_freed()  # as the web process does once a timeline is open
start = time.perf_counter()
tree = timeline.tree()
out["tree_bytes"] = answer(tree)
out["tree_s"] = time.perf_counter() - start
start = time.perf_counter()
answer(timeline.tree())
out["again_s"] = time.perf_counter() - start
largest = max(collapsed(tree), key=lambda node: node["children_count"], default=None)
if largest is not None:
    start = time.perf_counter()
    count, page = timeline.children(largest["id"], 0, 1000)
    out["page_bytes"] = answer({"group": largest["id"], "count": count, "children": page})
    out["page_s"] = time.perf_counter() - start
out["open_rss_mb"] = rss_mb()
del timeline, tree
gc.collect()
hand_back_freed()
out["after_rss_mb"] = rss_mb()
print(json.dumps(out))
"""


def _run(script: str, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=ROOT
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()
        return {"error": f"exit status {done.returncode}: {tail[-1] if tail else ''}"}
    return json.loads(lines[-1])


def measure(path: Path, ceiling_mb: int, serve: bool) -> dict:
    with tempfile.TemporaryDirectory() as work:
        out = _run(PARSE, str(path), work, str(ceiling_mb))
        if serve and "error" not in out:
            # The index where a worker puts it, beside the store.
            Path(work, "index").rename(Path(work, "store", INDEX_DIR_NAME))
            out["serve"] = _run(SERVE, str(Path(work, "store")))
    return out


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

    cases = [(f"tid-{n}", True, lambda p, n=n: many_tracks(p, n, "tid")) for n in args.tracks]
    cases += [(f"pid-{n}", True, lambda p, n=n: many_tracks(p, n, "pid")) for n in args.pids]
    cases += [
        (f"thread-{n}-d{args.depth}", False, lambda p, n=n: one_thread(p, n, args.depth))
        for n in args.single_thread
    ]
    print(f"{'trace':24} {'MB gz':>7} {'events':>10} {'tracks':>8} {'s':>8} {'peak MB':>8}")
    result = []
    for name, serve, make in cases:
        path = args.work / f"{name}.json.gz"
        if not path.exists():
            started = time.perf_counter()
            make(path)
            print(f"  (wrote {path.name} in {time.perf_counter() - started:.0f} s)")
        out = measure(path, args.ceiling_mb, serve)
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
        served = out.get("serve")
        if served is None:
            continue
        if "error" in served:
            print(f"{'':24} serving failed: {served['error']}")
            result.append(f"{name}_serve_error=1")
            continue
        figures = {
            "open_s": f"{served['open_s']:.2f}",
            "tree_s": f"{served['tree_s']:.3f}",
            "tree_bytes": served["tree_bytes"],
            "again_s": f"{served['again_s']:.4f}",
            "page_s": f"{served.get('page_s', 0):.3f}",
            "page_bytes": served.get("page_bytes", 0),
            "open_rss_mb": f"{served['open_rss_mb'] - served['base_rss_mb']:.0f}",
            "after_rss_mb": f"{served['after_rss_mb'] - served['base_rss_mb']:.0f}",
        }
        print(f"{'':24} served: " + ", ".join(f"{k} {v}" for k, v in figures.items()))
        result += [f"{name}_{k}={v}" for k, v in figures.items()]
    print("RESULT " + " ".join(result))


if __name__ == "__main__":
    main()
