"""First views benchmark: how long Timeline, Call tree and Memory take to show a job's data when
the page opens, in headless Chromium, on the largest shared jobs.

Parses, in a fresh database and through the real ingest: every large shared trace alone
(``gpu_training_rank0``, ``resnet50_pt18_workers4``, ``nccl_rank0``), the two-rank
``multirank_sampled`` job and the H100 collector's chunks (``tests/data/h100_collector``). Then,
for each job and page, with the built frontend served as production serves it (``serve``):

* browser: ms from navigation (``performance.timeOrigin``) to the page's data on screen, the
  DOM marker the page sets when it draws its data (``data-drawn`` on the timeline canvas, the
  flame graph, each chart), recorded by a MutationObserver in the page. *New browser*: no HTTP
  cache (the app's code fetched and compiled) on a job the server has not shown since its
  parse; *cold*: the same browser, the server's caches of the job dropped (the first view of a
  newly parsed job by someone who has used the app); *warm*: the page opened again. With each
  kind, the requests of one visit (resource timing), to show waterfalls (``--waterfalls``);
* API alone: the requests the page makes when it opens, through Django's test client in this
  process (cold: server caches dropped; warm: again).

    .venv/bin/python bench/first_views.py [--cold 3] [--warm 5] [--jobs all] [--dist DIR]

The machine may be shared: repeat the run and look at the spread (p50 and p95 are printed).
Last line, for the job slowest to open each page: RESULT timeline_first_ms=<warm p50>
timeline_first_p95_ms=<warm p95> timeline_cold_ms=<cold p50> timeline_new_browser_ms=<n>, the
same for calltree and memory.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import DATA, in_bench_database  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
VIEWPORT = {"width": 1366, "height": 800}
PASSWORD = "bench-password-1"

# name → (node, rank, kind, file) per part
JOBS: dict[str, list[tuple[str, int, str, Path]]] = {
    "gpu_training_rank0": [("algo-1", 0, "kineto", DATA / "gpu_training_rank0.pt.trace.json.gz")],
    "resnet50_workers4": [
        ("algo-1", 0, "kineto", DATA / "resnet50_pt18_workers4.pt.trace.json.gz")
    ],
    "nccl_rank0": [("algo-1", 0, "kineto", DATA / "nccl_rank0.json.gz")],
    "multirank_2_ranks": [
        ("algo-1", rank, "kineto", DATA / "multirank_sampled" / f"rank-{rank}.json.gz")
        for rank in (0, 1)
    ],
    "h100_collector": [
        ("algo-1", 0, "collector", path)
        for path in sorted((DATA / "h100_collector").glob("*.pcol"))
    ],
}

# When each page's data is on screen: its canvases and charts drawn (or the panel saying there
# is nothing to draw), its tables filled.
DRAWN = {
    "timeline": "() => !!document.querySelector('[data-testid=timeline-canvas][data-drawn]')",
    "calltree": """() => !!document.querySelector('.panel-empty') || (
        !!document.querySelector('[data-testid=flame-graph][data-drawn]') &&
        !!document.querySelector('table[aria-label="Call tree"] tbody tr'))""",
    "memory": """() => {
        if (document.querySelector('.panel-empty')) return true;
        const charts = [...document.querySelectorAll('.memory-grid .chart')];
        if (!charts.length || !charts.every((c) => c.dataset.drawn)) return false;
        return [...document.querySelectorAll('section[aria-label^="Memory events"]')]
            .every((s) => s.querySelector('tbody tr'));
    }""",
}
PATHS = {"timeline": "/timeline", "calltree": "/calltree", "memory": "/memory"}

# Records, in the page, when the page's data first shows (ms since navigation started).
WATCH = """(drawn) => {
  const done = new Function('return ' + drawn)();
  const check = () => {
    if (window.__firstViewMs === undefined && done()) {
      window.__firstViewMs = performance.now();
      observer.disconnect();
    }
  };
  const observer = new MutationObserver(check);
  observer.observe(document, { subtree: true, childList: true, attributes: true });
  check();
}"""

RESOURCES = """() => performance.getEntriesByType('resource')
  .filter((e) => e.name.includes('/api/') || e.name.includes('/static/'))
  .map((e) => ({ url: e.name.replace(location.origin, ''), start: e.startTime,
                 end: e.responseEnd, bytes: e.transferSize }))"""


def serve(threads: int):
    """The app served as production's gunicorn serves it: a few threads kept for good, each
    keeping its database connection (``CONN_MAX_AGE``), rather than a new thread and a new
    connection per request as Django's live server does. Returns the server (``server_port``,
    ``shutdown()``)."""
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.core.servers.basehttp import WSGIRequestHandler, WSGIServer
    from django.core.wsgi import get_wsgi_application

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args) -> None:
            pass

    class Pooled(WSGIServer):
        def __init__(self) -> None:
            super().__init__(("localhost", 0), Quiet)
            self.pool = ThreadPoolExecutor(threads)

        def process_request(self, request, client_address) -> None:
            self.pool.submit(self.work, request, client_address)

        def work(self, request, client_address) -> None:
            try:
                self.finish_request(request, client_address)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)

    server = Pooled()
    server.set_app(StaticFilesHandler(get_wsgi_application()))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def add_parts(job, parts: list[tuple[str, int, str, Path]]) -> list[int]:
    """The files stored as the job's parts (no Celery task queued: this process parses them)."""
    from django.core.files import File

    from profiler_app.core.models import Node, ProfilePart

    ids = []
    for node_name, rank, kind, path in parts:
        node, _ = Node.objects.get_or_create(job=job, name=node_name)
        part = ProfilePart(
            job=job,
            node=node,
            rank=rank,
            pid=1000 + rank,
            kind=kind,
            original_name=path.name,
            size_bytes=path.stat().st_size,
            sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        )
        with path.open("rb") as f:
            part.file.save(path.name, File(f), save=True)
        ids.append(part.id)
    return ids


def parse_job(user, name: str, parts: list[tuple[str, int, str, Path]]):
    from profiler_app.core.models import ProfilePart, TrainingJob
    from profiler_app.ingest import logic

    job = TrainingJob.objects.create(name=name, owner=user, status="completed")
    began = time.perf_counter()
    for part_id in add_parts(job, parts):
        assert logic.claim(part_id, "bench")
        logic.parse_claimed_part(part_id, "bench")
        part = ProfilePart.objects.get(pk=part_id)
        assert part.state == "done", part.error
    print(f"  parsed {name} ({len(parts)} parts) in {time.perf_counter() - began:.1f}s", flush=True)
    return job


def drop_server_caches() -> None:
    """What the web process keeps of jobs it has shown: opened indexes and job timelines,
    nested host events of the call tree."""
    from profiler_app.calltree import queries
    from profiler_app.timeline import logic

    logic.part_index.cache_clear()
    logic._open_job_timeline.cache_clear()
    queries._events.cache_clear()


def api_calls(client, job) -> dict[str, list[tuple[str, dict]]]:
    """The requests each page makes when it opens (after the shell's and the loaded job's)."""
    tracks = f"/api/jobs/{job.id}/timeline/tracks/"
    return {
        "timeline": [(f"/api/jobs/{job.id}/", {}), (tracks, {})],
        "calltree": [(f"/api/jobs/{job.id}/calltree/", {})],
        "memory": [(f"/api/jobs/{job.id}/memory/", {})],
    }


def time_api(client, job, reps: int) -> dict[str, dict[str, list[float]]]:
    """Per page, the time of its opening requests one after the other: cold (server caches
    dropped) and warm."""
    out: dict[str, dict[str, list[float]]] = {}
    for page, calls in api_calls(client, job).items():
        out[page] = {"cold": [], "warm": []}
        for kind in ("cold", "warm") * reps:
            if kind == "cold":
                drop_server_caches()
            began = time.perf_counter()
            for url, params in calls:
                response = client.get(url, params)
                assert response.status_code == 200, (url, response.content[:300])
            out[page][kind].append((time.perf_counter() - began) * 1000)
    return out


def visit(page, url: str) -> tuple[float, list[dict]]:
    page.goto(url)
    page.wait_for_function("() => window.__firstViewMs !== undefined", timeout=60_000)
    ms = page.evaluate("() => window.__firstViewMs")
    return ms, page.evaluate(RESOURCES)


def keep_problems(said: list[str]):
    """A console listener keeping the errors and warnings (a page should log none)."""

    def listen(message) -> None:
        if message.type in ("error", "warning"):
            said.append(f"{message.type}: {message.text}")

    return listen


def browse(live_url: str, cookie: dict, jobs: dict, cold: int, warm: int) -> dict:
    """Per job and page, visit times (ms) and the requests of one visit of each kind:

    * ``new``: a new browser (no HTTP cache: the app's code is fetched and compiled) on a job
      the server has not shown since its parse;
    * ``cold``: the same browser, the server's caches of the job dropped (the app's code is
      cached, as for anyone who used the app before): the first view after a parse;
    * ``warm``: the page opened again.
    """
    from playwright.sync_api import sync_playwright

    from profiler_app.core.models import LoadedProfile

    out: dict = {}
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for name, job in jobs.items():
            LoadedProfile.objects.update_or_create(user=job.owner, defaults={"job": job})
            for page_name, path in PATHS.items():
                context = chromium.new_context(viewport=VIEWPORT)
                context.add_cookies([{**cookie, "url": live_url}])
                context.add_init_script(f"({WATCH})({json.dumps(DRAWN[page_name])})")
                tab = context.new_page()
                result: dict = {"requests": {}, "console": []}
                tab.on("console", keep_problems(result["console"]))
                for kind in ["new"] + ["cold"] * cold + ["warm"] * warm:
                    if kind != "warm":
                        drop_server_caches()
                    ms, requests = visit(tab, live_url + path)
                    result.setdefault(kind, []).append(ms)
                    result["requests"][kind] = requests
                context.close()
                out[(name, page_name)] = result
        chromium.close()
    return out


def print_waterfall(label: str, requests: list[dict]) -> None:
    print(f"    {label}:")
    for r in sorted(requests, key=lambda r: r["start"]):
        print(
            f"      {r['start']:7.0f} → {r['end']:7.0f} ms  {r['bytes'] / 1024:7.1f} kB  {r['url'][:90]}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", type=int, default=3, help="cold visits per job and page")
    parser.add_argument("--warm", type=int, default=5, help="warm visits per job and page")
    parser.add_argument("--api", type=int, default=5, help="cold/warm API rounds per page")
    parser.add_argument("--jobs", default="all", help=f"comma-separated, of {', '.join(JOBS)}")
    parser.add_argument("--waterfalls", action="store_true", help="print each visit's requests")
    parser.add_argument("--threads", type=int, default=4, help="server threads (gunicorn's 4)")
    parser.add_argument("--dist", type=Path, help="a built frontend other than frontend/dist")
    args = parser.parse_args()
    chosen = list(JOBS) if args.jobs == "all" else args.jobs.split(",")

    # Playwright's sync API runs an event loop in this thread; the ORM calls between visits
    # are still ordinary blocking calls.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    in_bench_database("profiler_bench_first_views", lambda: run(args, chosen))


def run(args: argparse.Namespace, chosen: list[str]) -> None:
    """The benchmark itself, in its database."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    if args.dist:  # another build (of another commit, say) to compare with
        settings.FRONTEND_DIST = args.dist.resolve()
        settings.STATICFILES_DIRS = [settings.FRONTEND_DIST]
    if not (Path(settings.FRONTEND_DIST) / "index.html").exists():
        sys.exit("Build the frontend first: npm --prefix frontend run build")
    server = None
    try:
        user = get_user_model().objects.create_user("bench", password=PASSWORD)
        print("parsing the jobs …", flush=True)
        jobs = {name: parse_job(user, name, JOBS[name]) for name in chosen}
        client = Client()
        client.force_login(user)
        session = settings.SESSION_COOKIE_NAME
        cookie = {"name": session, "value": client.cookies[session].value}

        server = serve(args.threads)
        seen = browse(f"http://localhost:{server.server_port}", cookie, jobs, args.cold, args.warm)
        api = {name: time_api(client, job, args.api) for name, job in jobs.items()}

        print(
            f"\n{'job':<20} {'page':<9} {'new browser':>11} {'cold ms (each)':<22}"
            f" {'warm p50':>8} {'warm p95':>8} {'API cold p50':>12} {'API warm p50':>12}"
        )
        worst: dict[str, dict] = {}
        for (name, page_name), result in seen.items():
            if percentile(result["warm"], 50) > percentile(
                worst.get(page_name, {"warm": [0.0]})["warm"], 50
            ):
                worst[page_name] = result
            calls = api[name][page_name]
            print(
                f"{name:<20} {page_name:<9} {result['new'][0]:11.0f}"
                f" {', '.join(f'{t:.0f}' for t in result['cold']):<22}"
                f" {percentile(result['warm'], 50):8.0f} {percentile(result['warm'], 95):8.0f}"
                f" {percentile(calls['cold'], 50):12.0f} {percentile(calls['warm'], 50):12.0f}"
            )
            for said in sorted(set(result["console"])):
                print(f"    console {said[:150]}")
            if args.waterfalls:
                for kind, requests in result["requests"].items():
                    print_waterfall(f"a {kind} visit", requests)
        figures = " ".join(
            f"{page}_first_ms={percentile(r['warm'], 50):.0f} "
            f"{page}_first_p95_ms={percentile(r['warm'], 95):.0f} "
            f"{page}_cold_ms={percentile(r['cold'], 50):.0f} {page}_new_browser_ms={r['new'][0]:.0f}"
            for page, r in worst.items()
        )
        print(f"RESULT {figures}")
    finally:
        if server is not None:
            server.shutdown()


if __name__ == "__main__":
    main()
