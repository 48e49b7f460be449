"""Export benchmark: the whole timeline of a >= 10M-event, 16-rank job as Chrome-trace JSON (what
``GET …/timeline/export/`` streams), measuring how much the exporting process's memory grows.

Each rank's part is the largest shared trace replicated ``--copies`` times with shifted
timestamps (as ``bench/timeline.py`` builds it), parsed once by the real ingest and copied per
rank, then indexed for the timeline. The export runs in this process, as it runs in a web
process; its output is counted and dropped, as a client reading the stream would. A thread
samples the resident set size every 50 ms; the baseline is the size just before the export.

    .venv/bin/python bench/export.py [--ranks 16] [--copies 14]

Last line: RESULT export_rss_growth_mb=<n> export_heap_growth_mb=<n> export_mb=<n> export_s=<n>
events=<n> (the heap is the resident memory not backed by a file: the timeline index is
memory-mapped, and its pages count in the resident size while the kernel can drop them)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import DATA, LARGEST_SHARED, ROOT, synthesize  # noqa: E402

sys.path.insert(0, str(ROOT))
from profiler_app.timeline.pure.export import chrome_trace  # noqa: E402
from profiler_app.timeline.pure.index import open_index  # noqa: E402
from profiler_app.timeline.pure.query import JobTimeline  # noqa: E402
from profiler_app.timeline.pure.tree import Part  # noqa: E402
from profiler_app.traces import ingest_trace  # noqa: E402

MB = 1 << 20


def anonymous_rss() -> int:
    """Resident memory not backed by a file: the heap, what the export itself allocates (the
    timeline index is memory-mapped: its pages are file pages the kernel can drop)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    return 0


class PeakRss(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.process = psutil.Process()
        self.peak = self.process.memory_info().rss
        self.peak_anon = anonymous_rss()
        self.running = True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, self.process.memory_info().rss)
            self.peak_anon = max(self.peak_anon, anonymous_rss())
            time.sleep(0.05)


def build(work: Path, ranks: int, copies: int) -> list[Path]:
    synthetic = synthesize(DATA / LARGEST_SHARED, copies, work / f"synthetic-x{copies}.json.gz")
    first = work / "store-0"
    if not first.exists():
        ingest_trace(synthetic, "kineto", first)
    stores = [first]
    for rank in range(1, ranks):
        store = work / f"store-{rank}"
        if not store.exists():
            shutil.copytree(first, store)
        stores.append(store)
    return stores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--copies", type=int, default=14, help="copies of the trace per rank")
    parser.add_argument("--work", type=Path, default=ROOT / "var" / "bench-export")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)

    started = time.perf_counter()
    stores = build(args.work, args.ranks, args.copies)
    parts = [
        Part(r + 1, f"algo-{r // 8 + 1}", r, None, open_index(s)) for r, s in enumerate(stores)
    ]
    job = JobTimeline(parts)
    events = sum(p.index.n_events for p in parts)
    print(
        f"job: {len(parts)} ranks, {events:,} events, built in {time.perf_counter() - started:.1f} s"
    )

    baseline = psutil.Process().memory_info().rss
    baseline_anon = anonymous_rss()
    sampler = PeakRss()
    sampler.start()
    sent = 0
    started = time.perf_counter()
    for piece in chrome_trace(job):
        sent += len(piece)
    export_s = time.perf_counter() - started
    sampler.running = False
    sampler.join()
    growth = (sampler.peak - baseline) / MB
    heap_growth = (sampler.peak_anon - baseline_anon) / MB
    print(f"export: {sent / MB:,.0f} MB of JSON in {export_s:.1f} s")
    print(f"resident: {baseline / MB:,.0f} MB before, peak {sampler.peak / MB:,.0f} MB")
    print(
        f"of which not file-backed: {baseline_anon / MB:,.0f} MB before, peak "
        f"{sampler.peak_anon / MB:,.0f} MB"
    )
    print(
        f"RESULT export_rss_growth_mb={growth:.0f} export_heap_growth_mb={heap_growth:.0f} "
        f"export_mb={sent / MB:.0f} export_s={export_s:.1f} events={events}"
    )


if __name__ == "__main__":
    main()
