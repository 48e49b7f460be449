"""Timeline benchmark: viewport queries on a >= 10M-event, 16-rank job, first paint and frame
times in headless Chromium, against loading the same events as Chrome-trace JSON in the browser.

Builds, in a fresh database: a 16-rank job (8 ranks per node, one process each), every rank's
part the largest shared trace replicated ``--copies`` times with shifted timestamps, parsed by
the real ingest, then indexed for the timeline. Then:

* server side: ``GET …/timeline/viewport/`` through Django (auth, validation, query, encoding,
  gzip) for a 2,000-px view at every zoom level from the whole job to a few microseconds, at
  random positions, for the tracks the page shows when it opens (and for one rank fully
  expanded); p50/p95 and the payload as sent and uncompressed;
* browser: the built frontend served by a live server; ms from navigation to the first frame
  drawn with data, and the render time of every frame of a scripted zoom/pan sequence
  (``performance.now()`` around each draw);
* the alternative: the same events as one Chrome-trace JSON file (what Perfetto or
  chrome://tracing load), fetched and ``JSON.parse``d in the page, with the JS heap it takes.

    .venv/bin/python bench/timeline.py [--ranks 16] [--copies 14] [--requests 25]

Last line: RESULT viewport_p95_ms=<n> payload_kb=<n> first_paint_ms=<n> frame_p95_ms=<n> events=<n>
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import random
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import DATA, LARGEST_SHARED, ROOT, in_bench_database, synthesize  # noqa: E402

WIDTH_PX = 2000
CHROMIUM = "/usr/bin/chromium"


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def store_parts(job, path: Path, ranks: int) -> list[int]:
    """The file stored once (through the default storage: the data directory or the bucket),
    each rank's part (pid 1000 + rank) pointing at it. No Celery task is queued: this process
    parses them. Returns the parts' ids."""
    from django.core.files import File

    from profiler_app.core.models import Node, ProfilePart

    stored, ids = None, []
    for rank in range(ranks):
        node, _ = Node.objects.get_or_create(job=job, name=f"algo-{rank // 8 + 1}")
        part = ProfilePart(
            job=job,
            node=node,
            rank=rank,
            pid=1000 + rank,
            kind="kineto",
            original_name=path.name,
            size_bytes=path.stat().st_size,
            sha256=f"{rank:064d}",
        )
        if stored is None:
            with path.open("rb") as f:
                part.file.save(path.name, File(f), save=True)
            stored = part.file.name
        else:
            part.file = stored
            part.save()
        ids.append(part.id)
    return ids


def ingest_job(job, path: Path, ranks: int) -> None:
    """Each rank's part (``store_parts``) parsed by the real ingest in this process."""
    from profiler_app.core.models import ProfilePart
    from profiler_app.ingest import logic

    for rank, part_id in enumerate(store_parts(job, path, ranks)):
        started = time.perf_counter()
        assert logic.claim(part_id, "bench")
        logic.parse_claimed_part(part_id, "bench")
        part = ProfilePart.objects.get(pk=part_id)
        assert part.state == "done", part.error
        print(f"  parsed rank {rank} in {time.perf_counter() - started:.1f}s", flush=True)


def build_indexes(job) -> list[float]:
    """How long the worker's indexing after each parse takes (seconds each): each part's timeline
    index built once more, as the parse built it."""
    from profiler_app.profiles.models import PartSummary
    from profiler_app.timeline.pure.index import INDEX_DIR_NAME
    from profiler_app.timeline.pure.index_build import build_index

    took = []
    for summary in PartSummary.objects.filter(job=job).order_by("rank"):
        started = time.perf_counter()
        build_index(summary.store_dir, summary.store_dir / INDEX_DIR_NAME)
        took.append(time.perf_counter() - started)
    return took


def opening_tracks(roots: list[dict]) -> list[str]:
    """The tracks the page requests when it opens: nodes, CPU and GPUs open, the first process
    open down to its streams and host threads, every other process one aggregate row (the
    rule of frontend/src/pages/timeline/tree.ts)."""
    open_ids: set[str] = set()
    first: list[dict] = []

    def mark(node: dict) -> None:
        if node["kind"] in ("node", "cpu", "gpus"):
            open_ids.add(node["id"])
        if node["kind"] == "process" and not first:
            first.append(node)
        for child in node.get("children", []):
            mark(child)

    def open_inside(node: dict) -> None:
        if node["kind"] in ("process", "device", "hosts"):
            open_ids.add(node["id"])
        for child in node.get("children", []):
            open_inside(child)

    for root in roots:
        mark(root)
    open_inside(first[0])
    return rows(roots, open_ids)


def rows(roots: list[dict], open_ids: set[str]) -> list[str]:
    out = []

    def visit(node: dict) -> None:
        expanded = node["id"] in open_ids
        if node["data"] or (node.get("children") and not expanded):
            out.append(node["id"])
        if expanded:
            for child in node.get("children", []):
                visit(child)

    for root in roots:
        visit(root)
    return out


def every_group(roots: list[dict]) -> set[str]:
    found: set[str] = set()

    def visit(node: dict) -> None:
        if node.get("children"):
            found.add(node["id"])
            for child in node["children"]:
                visit(child)

    for root in roots:
        visit(root)
    return found


def server_side(client, job, body: dict, tracks: list[str], requests: int, rng: random.Random):
    """Per zoom level: request times (ms), payloads as sent and uncompressed (bytes)."""
    start, end = int(body["start_ns"]), int(body["end_ns"])
    span = end - start
    results = {}
    for exponent in range(0, 27, 2):
        view = max(span >> exponent, 2 * WIDTH_PX)
        times, sent, raw = [], [], []
        for _ in range(requests):
            lo = start + rng.randrange(0, max(span - view, 1))
            params = {
                "start_ns": str(lo),
                "end_ns": str(lo + view),
                "width_px": WIDTH_PX,
                "tracks": ",".join(tracks),
            }
            began = time.perf_counter()
            response = client.get(
                f"/api/jobs/{job.id}/timeline/viewport/", params, HTTP_ACCEPT_ENCODING="gzip"
            )
            times.append((time.perf_counter() - began) * 1000)
            assert response.status_code == 200, response.content[:300]
            sent.append(len(response.content))
            raw.append(
                len(gzip.decompress(response.content))
                if response.get("Content-Encoding")
                else len(response.content)
            )
        results[view] = (times, sent, raw)
    return results


def report_server(label: str, results: dict) -> tuple[list[float], int]:
    print(f"\n{label}")
    print(f"{'view span':>14} {'p50 ms':>8} {'p95 ms':>8} {'max kB sent':>12} {'max kB raw':>11}")
    every, biggest = [], 0
    for view, (times, sent, raw) in results.items():
        every.extend(times)
        biggest = max(biggest, max(sent))
        print(
            f"{view / 1e6:>11.3f} ms {percentile(times, 50):8.1f} {percentile(times, 95):8.1f} "
            f"{max(sent) / 1024:12.0f} {max(raw) / 1024:11.0f}"
        )
    print(f"{'all levels':>14} {percentile(every, 50):8.1f} {percentile(every, 95):8.1f}")
    return every, biggest


FRAMES = """async () => {
  const canvas = document.querySelector('[data-testid=timeline-canvas]');
  const box = canvas.getBoundingClientRect();
  const stats = window.timelineFrameStats;
  stats.frames.length = 0;
  const key = (k, ms) => new Promise((done) => {
    window.dispatchEvent(new KeyboardEvent('keydown', { key: k }));
    setTimeout(() => { window.dispatchEvent(new KeyboardEvent('keyup', { key: k })); done(); }, ms);
  });
  const wheel = (dy, dx, shift) => canvas.dispatchEvent(new WheelEvent('wheel', {
    deltaY: dy, deltaX: dx, shiftKey: shift, clientX: box.left + box.width * 0.6,
    clientY: box.top + 200, bubbles: true, cancelable: true }));
  const frame = () => new Promise((done) => requestAnimationFrame(() => done()));
  await key('w', 1500);
  await key('d', 800);
  await key('s', 700);
  await key('ArrowLeft', 600);
  await key('ArrowUp', 900);
  for (let i = 0; i < 30; i++) { wheel(i < 15 ? -120 : 120, 0, false); await frame(); }
  for (let i = 0; i < 30; i++) { wheel(80, 0, true); await frame(); }
  await key('s', 2000);
  await new Promise((done) => setTimeout(done, 500));
  return stats.frames.slice();
}"""

PARSE = """async (url) => {
  const began = performance.now();
  const text = await (await fetch(url)).text();
  const fetched = performance.now();
  let events = 0;
  let error = null;
  try {
    const trace = JSON.parse(text);
    events = trace.traceEvents.length;
    window.__kept = trace;
  } catch (e) { error = String(e); }
  const parsed = performance.now();
  return { bytes: text.length, fetch_ms: fetched - began, parse_ms: parsed - fetched, events, error };
}"""


class _Files(http.server.SimpleHTTPRequestHandler):
    """Serves the work folder to the page (cross-origin), as a static file host would."""

    def end_headers(self) -> None:
        self.send_header("Access-Control-Allow-Origin", "*")
        super().end_headers()

    def log_message(self, *args) -> None:
        pass


def file_server(directory: Path) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(_Files, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("localhost", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def browser(live_url: str, username: str, password: str, trace_urls: list[str]) -> dict:
    from playwright.sync_api import sync_playwright

    out: dict = {}
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--js-flags=--max-old-space-size=16384",
            ],
        )
        context = chromium.new_context(viewport={"width": 1920, "height": 1080})
        page = context.new_page()
        page.goto(f"{live_url}/login")
        page.get_by_label("User name").fill(username)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{live_url}/profiles")
        paints = []
        for _ in range(5):
            page.goto(f"{live_url}/timeline")
            page.wait_for_function(
                "() => window.timelineFrameStats?.firstDataPaintMs != null", timeout=60_000
            )
            paints.append(page.evaluate("() => window.timelineFrameStats.firstDataPaintMs"))
        out["first_paint_ms"] = paints
        page.wait_for_timeout(1000)
        out["frames"] = page.evaluate(FRAMES)
        parse_page = context.new_page()
        parse_page.goto(f"{live_url}/login")
        out["json"] = []
        cdp = context.new_cdp_session(parse_page)

        def heap_mb() -> float:
            cdp.send("HeapProfiler.collectGarbage")
            return cdp.send("Runtime.getHeapUsage")["usedSize"] / 2**20

        for url in trace_urls:
            before = heap_mb()
            result = parse_page.evaluate(PARSE, url)
            # What the parsed trace keeps alive (the page holds it, as a viewer would).
            result["heap_mb"] = heap_mb() - before
            out["json"].append(result)
            parse_page.reload()  # drop the parsed trace before the next one
        chromium.close()
    return out


def chrome_trace_files(synthetic: Path, work: Path, ranks: list[int]) -> list[Path]:
    """The Chrome-trace JSON a browser-side viewer would load: the ranks' traces merged."""
    import msgspec

    files = []
    with gzip.open(synthetic) as f:
        text = f.read()
    events = bytes(msgspec.json.decode(text, type=dict[str, msgspec.Raw])["traceEvents"])[1:-1]
    for n in ranks:
        target = work / f"timeline-{synthetic.name.split('.')[0]}-{n}-ranks.json"
        if not target.exists():
            with target.open("wb") as out:
                out.write(b'{"traceEvents":[')
                for rank in range(n):
                    out.write((b"," if rank else b"") + events)
                out.write(b"]}")
        files.append(target)
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--copies", type=int, default=14, help="copies of the trace per rank")
    parser.add_argument("--requests", type=int, default=25, help="requests per zoom level")
    parser.add_argument("--json-ranks", default="1,2", help="ranks merged into the JSON compared")
    parser.add_argument("--work", type=Path, default=ROOT / "var" / "bench")
    args = parser.parse_args()

    args.work.mkdir(parents=True, exist_ok=True)
    synthetic = synthesize(
        DATA / LARGEST_SHARED, args.copies, args.work / f"synthetic-x{args.copies}.pt.trace.json.gz"
    )
    in_bench_database("profiler_bench_timeline", lambda: run(args, synthetic))


def run(args: argparse.Namespace, synthetic: Path) -> None:
    """The benchmark itself, in its database."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.db import connections
    from django.test import Client
    from django.test.testcases import LiveServerThread

    from profiler_app.core.models import LoadedProfile, TrainingJob

    if not (Path(settings.FRONTEND_DIST) / "index.html").exists():
        sys.exit("Build the frontend first: npm --prefix frontend run build")
    server = None
    try:
        user = get_user_model().objects.create_user("bench", password="bench-password-1")
        job = TrainingJob.objects.create(name="synthetic-16-ranks", owner=user, status="completed")
        LoadedProfile.objects.create(user=user, job=job)
        print(f"ingesting a {args.ranks}-rank job, {synthetic.name} per rank …", flush=True)
        ingest_job(job, synthetic, args.ranks)
        builds = build_indexes(job)
        print(
            f"timeline index per part: {np.mean(builds):.1f}s on average, {sum(builds):.0f}s in all"
        )

        client = Client()
        client.force_login(user)
        began = time.perf_counter()
        body = client.get(f"/api/jobs/{job.id}/timeline/tracks/").json()
        print(
            f"track tree, first request (opens {len(body['parts'])} indexes): {(time.perf_counter() - began) * 1000:.0f} ms"
        )
        events = body["n_events"]
        roots = body["tracks"]
        opening = opening_tracks(roots)
        rank0 = rows(
            roots,
            every_group([roots[0]["children"][-1]["children"][0]])
            | {roots[0]["id"], roots[0]["children"][-1]["id"]},
        )
        rng = random.Random(7)
        default_times, default_payload = report_server(
            f"viewport, {WIDTH_PX} px, the {len(opening)} tracks the page opens with ({events:,} events)",
            server_side(client, job, body, opening, args.requests, rng),
        )
        expanded_times, expanded_payload = report_server(
            f"viewport, {WIDTH_PX} px, rank 0 fully expanded ({len(rank0)} tracks)",
            server_side(client, job, body, rank0, args.requests, rng),
        )
        viewport_p95 = percentile(default_times + expanded_times, 95)
        payload_kb = max(default_payload, expanded_payload) / 1024

        connections.close_all()
        server = LiveServerThread("localhost", StaticFilesHandler, port=0)
        server.daemon = True
        server.start()
        server.is_ready.wait()
        json_files = chrome_trace_files(
            synthetic, args.work, [int(n) for n in args.json_ranks.split(",")]
        )
        files = file_server(args.work)
        urls = [f"http://localhost:{files.server_port}/{path.name}" for path in json_files]
        seen = browser(f"http://localhost:{server.port}", "bench", "bench-password-1", urls)
        files.shutdown()
        first_paint = float(np.median(seen["first_paint_ms"]))
        frames = seen["frames"]
        print(
            f"\nfirst paint after opening /timeline (5 loads): {', '.join(f'{p:.0f}' for p in seen['first_paint_ms'])} ms"
        )
        print(
            f"scripted zoom/pan: {len(frames)} frames, render p50 {percentile(frames, 50):.1f} ms, "
            f"p95 {percentile(frames, 95):.1f} ms, max {max(frames):.1f} ms"
        )
        print(
            "\nthe same events as one Chrome-trace JSON, loaded in the page (fetch from a local file server + JSON.parse):"
        )
        per_event = []
        for path, result in zip(json_files, seen["json"], strict=True):
            print(
                f"  {path.name}: {result['bytes'] / 2**20:.0f} MiB, {result['events']:,} trace events, "
                f"fetch {result['fetch_ms']:.0f} ms, parse {result['parse_ms']:.0f} ms, "
                f"JS heap +{result['heap_mb']:.0f} MiB{'  ERROR ' + result['error'] if result['error'] else ''}"
            )
            if result["events"]:
                per_event.append(
                    (
                        result["bytes"] / result["events"],
                        result["parse_ms"] / result["events"],
                        result["heap_mb"] / result["events"],
                    )
                )
        if per_event:
            size, parse, heap = (float(np.mean(v)) for v in zip(*per_event, strict=True))
            first_ranks = int(args.json_ranks.split(",")[0])
            all_events = seen["json"][0]["events"] // first_ranks * args.ranks
            all_bytes = size * all_events
            verdict = (
                " — past V8's longest string (2**29 - 24 characters): no single JSON.parse can read it"
                if all_bytes > 2**29 - 24
                else ""
            )
            print(
                f"  all {args.ranks} ranks: {all_events:,} trace events, {all_bytes / 2**30:.2f} GiB of JSON, "
                f"about {parse * all_events / 1000:.0f} s to parse and {heap * all_events / 1024:.1f} GiB "
                f"of JS heap by linear extrapolation{verdict}"
            )
        print(
            f"RESULT viewport_p95_ms={viewport_p95:.1f} payload_kb={payload_kb:.0f} "
            f"first_paint_ms={first_paint:.0f} frame_p95_ms={percentile(frames, 95):.1f} events={events}"
        )
    finally:
        if server is not None:
            server.terminate()


if __name__ == "__main__":
    main()
