"""Analysis views benchmark: range totals, the call tree and a SQL group-by on a >= 10M-event job,
each measured through the HTTP API (Django: auth, validation, query, encoding).

Builds, in a fresh database, the same 16-rank job as ``bench/timeline.py`` (every rank's part the
largest shared trace replicated ``--copies`` times, parsed by the real ingest, which indexes it).
Then:

* range totals: ``GET …/timeline/range/`` over every track (the tree's roots stand for all their
  lanes) for random ranges, from a microsecond to the whole job; p50/p95;
* call tree: ``GET …/calltree/?part=…`` of every host thread of a part, the first request for
  each of ``--trees`` parts (nothing cached: each part read and nested afresh); the worst;
* SQL: ``POST …/sql/`` with ``SELECT name, count(*), sum(dur_ns) FROM events GROUP BY name`` over
  all the job's events; the median of ``--queries`` runs.

    .venv/bin/python bench/analysis_views.py [--ranks 16] [--copies 14]

Last line: RESULT range_totals_p95_ms=<n> call_tree_ms=<n> sql_group_by_ms=<n> events=<n>
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import DATA, LARGEST_SHARED, ROOT, in_bench_database, synthesize  # noqa: E402
from timeline import ingest_job, percentile  # noqa: E402

GROUP_BY = "SELECT name, count(*) AS n, sum(dur_ns) AS total_ns FROM events GROUP BY name"
# The same group-by limited to a time range: no totals answer it, every event is read.
SCANNING_GROUP_BY = GROUP_BY.replace("GROUP BY", "WHERE start_ns > 0 GROUP BY")


def timed(call) -> tuple[float, object]:
    began = time.perf_counter()
    response = call()
    elapsed = (time.perf_counter() - began) * 1000
    assert response.status_code == 200, response.content[:500]
    return elapsed, response


def sql_ms(client, job, query: str = GROUP_BY) -> tuple[float, str, int]:
    """The query's answer read whole (the rows stream; the query holds one of the console's
    slots until its answer is closed): ms, what it read (``totals`` or ``events``), rows."""
    began = time.perf_counter()
    response = client.post(
        f"/api/jobs/{job.id}/sql/", {"query": query}, content_type="application/json"
    )
    assert response.status_code == 200, response.content[:500]
    body = json.loads(b"".join(response.streaming_content))
    response.close()
    assert body["rows"]
    return (time.perf_counter() - began) * 1000, body["read_from"], len(body["rows"])


def range_totals(client, job, body: dict, requests: int, rng: random.Random) -> list[float]:
    start, end = int(body["start_ns"]), int(body["end_ns"])
    tracks = ",".join(root["id"] for root in body["tracks"])
    times = []
    for _ in range(requests):
        width = int(10 ** rng.uniform(3, math.log10(end - start)))
        lo = rng.randint(start, max(start, end - width))
        elapsed, response = timed(
            lambda lo=lo, width=width: client.get(
                f"/api/jobs/{job.id}/timeline/range/",
                {"start_ns": lo, "end_ns": lo + width, "tracks": tracks},
            )
        )
        times.append(elapsed)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--copies", type=int, default=14, help="copies of the trace per rank")
    parser.add_argument("--requests", type=int, default=40, help="random range requests")
    parser.add_argument("--trees", type=int, default=3, help="parts whose call tree is asked")
    parser.add_argument("--queries", type=int, default=5, help="SQL group-by runs")
    parser.add_argument("--work", type=Path, default=ROOT / "var" / "bench")
    args = parser.parse_args()

    args.work.mkdir(parents=True, exist_ok=True)
    synthetic = synthesize(
        DATA / LARGEST_SHARED, args.copies, args.work / f"synthetic-x{args.copies}.pt.trace.json.gz"
    )
    in_bench_database("profiler_bench_views", lambda: run(args, synthetic))


def run(args: argparse.Namespace, synthetic: Path) -> None:
    """The benchmark itself, in its database."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from profiler_app.core.models import TrainingJob
    from profiler_app.profiles.models import PartSummary

    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    job = TrainingJob.objects.create(name="synthetic-16-ranks", owner=user, status="completed")
    print(f"ingesting a {args.ranks}-rank job, {synthetic.name} per rank …", flush=True)
    ingest_job(job, synthetic, args.ranks)
    client = Client()
    client.force_login(user)
    body = client.get(f"/api/jobs/{job.id}/timeline/tracks/").json()
    events = body["n_events"]
    rng = random.Random(7)

    ranges = range_totals(client, job, body, args.requests, rng)
    print(
        f"\nrange totals over all {len(body['tracks'])} root tracks ({events:,} events), "
        f"{len(ranges)} random ranges: p50 {percentile(ranges, 50):.0f} ms, "
        f"p95 {percentile(ranges, 95):.0f} ms, max {max(ranges):.0f} ms"
    )

    parts = list(PartSummary.objects.filter(job=job).order_by("rank"))[: args.trees]
    trees = []
    for summary in parts:
        elapsed, response = timed(
            lambda s=summary: client.get(f"/api/jobs/{job.id}/calltree/", {"part": s.part_id})
        )
        trees.append(elapsed)
        print(
            f"call tree of rank {summary.rank} ({summary.n_events:,} events), first request: "
            f"{elapsed:.0f} ms, {response.json()['frames']:,} frames"
        )
    call_tree = max(trees)

    runs = [sql_ms(client, job) for _ in range(args.queries)]
    sql = [ms for ms, _, _ in runs]
    _, read_from, rows = runs[-1]
    scan_ms, _, _ = sql_ms(client, job, SCANNING_GROUP_BY)
    print(
        f"SQL group-by over {events:,} events ({rows:,} names, from the {read_from}): "
        f"{', '.join(f'{t:.0f}' for t in sql)} ms; median {statistics.median(sql):.0f} ms; "
        f"with a time filter (every event read): {scan_ms:.0f} ms"
    )
    print(
        f"RESULT range_totals_p95_ms={percentile(ranges, 95):.0f} call_tree_ms={call_tree:.0f} "
        f"sql_group_by_ms={statistics.median(sql):.0f} events={events}"
    )


if __name__ == "__main__":
    main()
