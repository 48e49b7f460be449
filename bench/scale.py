"""Scale benchmark: a ≥ 100M-event, 16-rank job, ingested by the real ingest task with one worker
per core, then every page it is read through timed (server side, through Django).

How the job is built: the largest shared trace replicated ``--copies`` times with shifted
timestamps (``ingest.synthesize``; 138 copies are 6.3M events, 2.2 GB gzipped) is each rank's
part. Each part is parsed by the ingest task in a fresh process, as a worker parses it, ``--workers``
at a time (a job's parts parse in parallel across workers); the baseline is a bare streaming
gunzip of the same file, measured in the same run. Then:

* Dashboard: the first answer (computed from the aggregates) and the p95 of repeated requests;
* timeline: the first viewport of the whole job (nothing read yet), then the p95 of random
  viewports at every zoom level, for the tracks the page opens with (``timeline.server_side``);
* range totals over every root track for random ranges (``analysis_views.range_totals``);
* SQL: ``SELECT name, count(*), sum(dur_ns) FROM events GROUP BY name`` over all events, median
  (answered from each part's event totals); once the same over the events that start in 1 % of
  the job (from its middle), which no totals answer: the store's row groups let it read only that
  range (``sql_scan_ms``); and once with a filter every event passes (``sql_full_scan_ms``).

    .venv/bin/python bench/scale.py [--ranks 16] [--copies 138] [--workers <cores>]

Last line: RESULT scale_events=<n> ingest_s=<n> ingest_vs_gunzip=<x> dashboard_p95_ms=<n>
viewport_p95_ms=<n> first_viewport_ms=<n> range_totals_p95_ms=<n> sql_group_by_ms=<n>
worker_peak_rss_mb=<n> sql_read_from=<totals|events> sql_scan_ms=<n> sql_full_scan_ms=<n>
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from analysis_views import GROUP_BY, SCANNING_GROUP_BY, range_totals, sql_ms, timed  # noqa: E402
from dashboard import percentile_ms, timed_requests  # noqa: E402
from ingest import DATA, LARGEST_SHARED, ROOT, gunzip, in_bench_database, synthesize  # noqa: E402
from timeline import WIDTH_PX, opening_tracks, percentile, server_side, store_parts  # noqa: E402

# Runs in a fresh process, as a worker runs the task: one stored part parsed, then its numbers.
PARSE = r"""
import json, os, sys, time
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "profiler_app.settings")
import django
django.setup()
from profiler_app.core.models import ProfilePart
from profiler_app.ingest.tasks import ingest_part
ingest_part.app.finalize()  # a running worker did this at start-up
start = time.perf_counter()
ingest_part.apply(args=[int(sys.argv[1])])
elapsed = time.perf_counter() - start
part = ProfilePart.objects.get(pk=int(sys.argv[1]))
with open("/proc/self/status") as status:  # this process's own peak
    rss_mb = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) / 1024
print(json.dumps({"seconds": elapsed, "rss_mb": rss_mb, "state": part.state, "error": part.error}))
"""


def time_filtered_group_by(start_ns: int, end_ns: int, share: float = 0.01) -> str:
    """The group-by over the events that start in ``share`` of the job, from its middle."""
    lo = start_ns + (end_ns - start_ns) // 2
    hi = lo + int((end_ns - start_ns) * share)
    return GROUP_BY.replace("GROUP BY", f"WHERE start_ns BETWEEN {lo} AND {hi} GROUP BY")


def parse_all(part_ids: list[int], workers: int) -> tuple[float, list[dict]]:
    """Wall seconds to parse every part, ``workers`` processes at a time, and each one's numbers."""

    def parse(part_id: int) -> dict:
        done = subprocess.run(
            [sys.executable, "-c", PARSE, str(part_id)],
            env=os.environ,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        found = json.loads(done.stdout.strip().splitlines()[-1])
        assert found["state"] == "done", found["error"]
        print(f"  part {part_id}: {found['seconds']:.1f}s, {found['rss_mb']:.0f} MB", flush=True)
        return found

    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(parse, part_ids))
    return time.perf_counter() - started, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--copies", type=int, default=138, help="copies of the trace per rank")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--requests", type=int, default=8, help="viewports per zoom level")
    parser.add_argument("--ranges", type=int, default=40, help="random range-totals requests")
    parser.add_argument("--queries", type=int, default=3, help="SQL group-by runs")
    parser.add_argument("--work", type=Path, default=ROOT / "var" / "bench")
    args = parser.parse_args()

    args.work.mkdir(parents=True, exist_ok=True)
    print(f"synthesizing {args.copies} copies of {LARGEST_SHARED} …", flush=True)
    synthetic = synthesize(
        DATA / LARGEST_SHARED, args.copies, args.work / f"synthetic-x{args.copies}.pt.trace.json.gz"
    )
    gunzip_s, json_bytes = gunzip(synthetic)
    print(f"  {synthetic.stat().st_size / 1e9:.2f} GB gzipped, {json_bytes / 1e9:.2f} GB JSON")
    in_bench_database("profiler_bench_scale", lambda: run(args, synthetic, gunzip_s))


def run(args: argparse.Namespace, synthetic: Path, gunzip_s: float) -> None:
    """The job ingested and its pages timed, in the benchmark's database."""
    from django.contrib.auth import get_user_model
    from django.db import connections
    from django.test import Client, override_settings

    from profiler_app.core.models import TrainingJob

    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    job = TrainingJob.objects.create(name="scale", owner=user, status="completed")
    part_ids = store_parts(job, synthetic, args.ranks)
    connections.close_all()  # the parsing processes open their own
    print(f"ingesting {args.ranks} parts, {args.workers} workers …", flush=True)
    ingest_s, parsed = parse_all(part_ids, args.workers)
    part_s = statistics.mean(p["seconds"] for p in parsed)
    worker_rss = max(p["rss_mb"] for p in parsed)

    client = Client()
    client.force_login(user)
    dashboard_url = f"/api/jobs/{job.id}/dashboard/"
    dashboard_first = timed_requests(client, [dashboard_url])
    dashboard = timed_requests(client, [dashboard_url] * 60)

    body = client.get(f"/api/jobs/{job.id}/timeline/tracks/").json()
    events = body["n_events"]
    tracks = opening_tracks(body["tracks"])
    first_viewport, _ = timed(
        lambda: client.get(
            f"/api/jobs/{job.id}/timeline/viewport/",
            {
                "start_ns": body["start_ns"],
                "end_ns": body["end_ns"],
                "width_px": WIDTH_PX,
                "tracks": ",".join(tracks),
            },
        )
    )
    rng = random.Random(7)
    levels = server_side(client, job, body, tracks, args.requests, rng)
    viewports = [t for times, _, _ in levels.values() for t in times]
    ranges = range_totals(client, job, body, args.ranges, rng)
    sql_runs = [sql_ms(client, job) for _ in range(args.queries)]
    sql = [ms for ms, _, _ in sql_runs]
    [read_from] = {source for _, source, _ in sql_runs}
    print(f"measured: range totals p95 {percentile(ranges, 95):.0f} ms, SQL {sql}", flush=True)
    window_query = time_filtered_group_by(int(body["start_ns"]), int(body["end_ns"]))
    scan_ms, _, _ = sql_ms(client, job, window_query)
    # Reading 100M events takes longer than the console's 10 s limit: measured without it.
    with override_settings(SQL_TIMEOUT_S=600):
        full_scan_ms, _, _ = sql_ms(client, job, SCANNING_GROUP_BY)

    print(f"\n{args.ranks} ranks, {events:,} events")
    print(
        f"ingest: {ingest_s:.0f}s for the job ({args.workers} workers); a part "
        f"{part_s:.1f}s on average vs gunzip {gunzip_s:.1f}s ({part_s / gunzip_s:.1f}x); "
        f"worker peak RSS {worker_rss:.0f} MB"
    )
    print(f"{'case':<44} {'p50 ms':>8} {'p95 ms':>8}")
    for label, samples_ms in {
        "dashboard, first answer": [1000 * t for t in dashboard_first],
        "dashboard, repeated": [1000 * t for t in dashboard],
        "timeline viewport, first (whole job)": [first_viewport],
        "timeline viewports, every zoom level": viewports,
        f"range totals, {len(body['tracks'])} root tracks": ranges,
        f"SQL group-by over every event (from the {read_from})": sql,
        "SQL group-by, time filter of 1 % of the job": [scan_ms],
        "SQL group-by, time filter every event passes": [full_scan_ms],
    }.items():
        print(f"{label:<44} {percentile(samples_ms, 50):8.1f} {percentile(samples_ms, 95):8.1f}")
    print(
        f"RESULT scale_events={events} ingest_s={ingest_s:.0f} "
        f"ingest_vs_gunzip={part_s / gunzip_s:.2f} "
        f"dashboard_p95_ms={percentile_ms(dashboard, 95):.1f} "
        f"viewport_p95_ms={percentile(viewports, 95):.1f} "
        f"first_viewport_ms={first_viewport:.0f} "
        f"range_totals_p95_ms={percentile(ranges, 95):.0f} "
        f"sql_group_by_ms={statistics.median(sql):.0f} worker_peak_rss_mb={worker_rss:.0f} "
        f"sql_read_from={read_from} sql_scan_ms={scan_ms:.0f} sql_full_scan_ms={full_scan_ms:.0f}"
    )


if __name__ == "__main__":
    main()
