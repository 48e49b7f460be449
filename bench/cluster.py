"""Cluster page latency for a synthetic 64-rank job of ≥ 20M events, and the time to diff two
10M-event jobs (server side, in process, on a fresh database).

How the jobs are built: one real trace (``nccl_rank0``, NCCL collectives with message sizes) is
parsed once by the real ingest; its aggregate rows — the ones the ingest writes per part,
cluster tables included — are then replicated in SQL for every rank, as if each rank had
recorded ``copies`` back-to-back copies of that trace: rows that grow with the trace (steps,
step breakdowns, annotations) are repeated ``copies`` times with shifted times and step numbers,
per-name rows (kernels, collectives, activities) get ``copies`` times the counts and times. One
rank is made 30% slower. Ingesting 20M events through the parser would take hours on a small
machine and would produce the same rows; the event count reported is the sum of the parts'
``n_events`` (real events of the template × copies × ranks).

The same job's Dashboard is timed too: its first answer (computed from the aggregates) and the
p95 of repeated requests (the answer is kept until the job changes, as for every reader).

    .venv/bin/python bench/cluster.py [--small] [--ranks 64] [--events 20000000] [--requests 60]

For 1,024 ranks: ``--ranks 1024 --events 27600000`` (two copies of the template per rank).
The job's insights are computed once, in process, as a worker computes them (their per-rank
collective waits are what the Cluster page shows). Before, each rank is read for them as the
parse of its part has a worker do it (``prepare_rank``), in two processes as on this machine's
two workers (``prepare_s``: their wall time): the parts here are copied in SQL, not parsed.
A rank's read covers its timeline store, which holds the template's events once (the replicated
copies exist as aggregate rows only).

Last line: RESULT cluster_ranks=<n> cluster_p95_ms=<n> cluster_first_ms=<n> dashboard_p95_ms=<n>
dashboard_first_ms=<n> diff_s=<n> events=<n> prepare_s=<n> insights_done=<0|1> insights_s=<n>
insights_again_s=<n> (a second run, after a system rule's parameter changed: every rank's
result kept) insights_peak_rss_mb=<n> analyses_mb=<n> sql_group_by_ms=<n> (median of 3)
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from analysis_views import sql_ms  # noqa: E402
from dashboard import percentile_ms, timed_requests  # noqa: E402
from ingest import DATA, in_bench_database  # noqa: E402

TEMPLATE = "nccl_rank0.json.gz"
SLOW_FACTOR = 1.3
# Columns scaled by the copies (per-name totals) and by a slow rank's factor (step times).
SUMMED = {
    "count",
    "total_ns",
    "bytes",
    "sized_count",
    "sized_ns",
    "comm_ns",
    "overlap_ns",
    "n_events",
    "sum_sq_ns2",
}
STEP_TIMES = {"dur_ns", "gap_ns", "compute_ns", "tail_ns", "compute_busy_ns"}
REPEATED = ("ingest_step", "ingest_annotation", "ingest_stepbreakdown")


def parse_template(job) -> tuple[int, int, int]:
    """Parses the template trace as rank 0; returns its part id, events and time span."""
    from django.core.files import File

    from profiler_app.core.models import Node, ProfilePart
    from profiler_app.ingest import logic
    from profiler_app.profiles.models import PartSummary

    path = DATA / TEMPLATE
    node = Node.objects.create(job=job, name="algo-1")
    # Stored as the API stores an upload, but parsed here rather than queued to a worker.
    part = ProfilePart(
        job=job,
        node=node,
        rank=0,
        kind="kineto",
        original_name=path.name,
        size_bytes=path.stat().st_size,
        sha256="template",
    )
    with path.open("rb") as stream:
        part.file.save(path.name, File(stream), save=True)
    assert logic.claim(part.id, "bench")
    logic.parse_claimed_part(part.id, "bench")
    summary = PartSummary.objects.get(part=part)
    return part.id, summary.n_events, summary.end_ns - summary.start_ns


def replicate(template_part: int, span_ns: int, job, ranks: range, copies: int, slow: int) -> None:
    """Every aggregate row of the template part, for each rank of ``ranks`` in ``job``."""
    from django.db import connection

    from profiler_app.core.models import Node, ProfilePart
    from profiler_app.ingest.save import AGGREGATE_TABLES

    template = ProfilePart.objects.get(id=template_part)
    for rank in ranks:
        node, _ = Node.objects.get_or_create(job=job, name=f"algo-{rank // 8 + 1}")
        part = ProfilePart.objects.create(
            job=job,
            node=node,
            rank=rank,
            kind="kineto",
            original_name=template.original_name,
            size_bytes=template.size_bytes,
            sha256=f"{job.id}-{rank}",
            file=template.file.name,
            state="done",
        )
        factor = SLOW_FACTOR if rank == slow else 1 + 0.002 * (rank % 5)
        with connection.cursor() as cursor:
            for model in AGGREGATE_TABLES:
                _copy_rows(
                    cursor,
                    model._meta.db_table,
                    model,
                    template_part,
                    part,
                    copies,
                    factor,
                    span_ns,
                )


def _copy_rows(cursor, table, model, template_part, part, copies, factor, span_ns) -> None:
    repeated = table in REPEATED
    columns, values = [], []
    for field in model._meta.concrete_fields:
        column = field.column
        if column == "id":
            continue
        fixed = {
            "job_id": part.job_id,
            "part_id": part.id,
            "node_id": part.node_id,
            "rank": part.rank,
        }
        if column in fixed:
            value = str(int(fixed[column]))
        elif repeated and column == "start_ns":
            value = f"start_ns + k::bigint * {span_ns}"
        elif repeated and column == "step":
            value = "step + k * 1000"
        elif table == "ingest_stepbreakdown" and column in STEP_TIMES:
            value = f"round({column} * {factor})::bigint"
        elif not repeated and column in SUMMED:
            value = f"{column} * {copies}"
        else:
            value = column
        columns.append(column)
        values.append(value)
    series = f", generate_series(0, {copies - 1}) AS k" if repeated else ""
    cursor.execute(
        f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(values)} "
        f"FROM {table}{series} WHERE part_id = %s",
        [template_part],
    )


def prepare_ranks(job, ranks: int, workers: int = 2) -> float:
    """Seconds ``workers`` processes take to read every rank for the insights, as the parses'
    workers do once each rank's part is parsed (``insights.logic.prepare_rank``)."""
    from django.db import connections

    from profiler_app.insights import logic

    connections.close_all()  # each process opens its own
    started = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        pool.starmap(logic.prepare_rank, [(job.id, rank) for rank in range(ranks)], chunksize=8)
    return time.perf_counter() - started


def run_insights(job):
    """Seconds the job's insights took, computed as the worker computes them, and their row."""
    from profiler_app.insights import logic
    from profiler_app.insights.models import InsightsStatus, JobInsights

    JobInsights.objects.get_or_create(job=job, window=job.window)
    JobInsights.objects.filter(job=job).update(status=InsightsStatus.QUEUED)
    started = time.perf_counter()
    logic.compute(job.id)
    return time.perf_counter() - started, JobInsights.objects.get(job=job, window=job.window)


def run_insights_again(job) -> float:
    """Seconds a second run takes after a change that reads no rank again (a system rule's
    parameter): each rank's kept result is combined."""
    from profiler_app.insights.models import RuleOverrides

    RuleOverrides.objects.create(job=job, params={"StepOutlier_stddev": 4})
    seconds, insights = run_insights(job)
    assert insights.status == "done", insights.error
    return seconds


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (the insights run is its largest part)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def analyses_mb(insights) -> float:
    return len(json.dumps(insights.analyses)) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="8 ranks, 1M events: a quick check")
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--events", type=int, default=20_000_000)
    parser.add_argument("--diff-events", type=int, default=10_000_000)
    parser.add_argument("--requests", type=int, default=60)
    args = parser.parse_args()
    if args.small:
        args.ranks, args.events, args.diff_events, args.requests = 8, 1_000_000, 500_000, 10

    in_bench_database("profiler_bench_cluster", lambda: run(args))


def run(args: argparse.Namespace) -> None:
    """The benchmark itself, in its database."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from profiler_app.cluster import compare
    from profiler_app.core.models import TrainingJob
    from profiler_app.profiles.models import PartSummary

    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    client = Client()
    client.force_login(user)
    source = TrainingJob.objects.create(name="template", owner=user, status="completed")
    template, template_events, span_ns = parse_template(source)

    def build(name: str, ranks: int, events: int, slow: int) -> tuple[TrainingJob, int]:
        copies = math.ceil(events / (ranks * template_events))
        job = TrainingJob.objects.create(name=name, owner=user, status="completed")
        started = time.perf_counter()
        replicate(template, span_ns, job, range(ranks), copies, slow)
        total = sum(PartSummary.objects.filter(job=job).values_list("n_events", flat=True))
        print(
            f"  {name}: {ranks} ranks × {copies} copies, {total:,} events, "
            f"built in {time.perf_counter() - started:.1f}s",
            flush=True,
        )
        return job, total

    print(f"building jobs from {TEMPLATE} ({template_events:,} events) …", flush=True)
    big, big_events = build("cluster", args.ranks, args.events, slow=args.ranks // 3)
    # Statistics as a server's autovacuum keeps them: the job's millions of rows were
    # written in seconds, faster than it looks.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    # The insights run a worker does once the job's parts are parsed (in process): its
    # per-rank collective waits are what the Cluster page shows.
    built_rss_mb = peak_rss_mb()
    prepare_s = prepare_ranks(big, args.ranks)
    print(f"  each rank read for the insights by two worker processes in {prepare_s:.1f}s")
    insights_s, insights = run_insights(big)
    again_s = run_insights_again(big)
    print(
        f"  insights of {args.ranks} ranks: {insights.status} in {insights_s:.1f}s "
        f"(again, every rank kept: {again_s:.1f}s), peak RSS {peak_rss_mb():.0f} MB "
        f"({built_rss_mb:.0f} MB before them), analyses {analyses_mb(insights):.1f} MB",
        flush=True,
    )
    diff_ranks = max(2, args.ranks // 2)
    a, _ = build("diff-a", diff_ranks, args.diff_events, slow=-1)
    b, _ = build("diff-b", diff_ranks, args.diff_events, slow=1)

    n = args.requests
    cluster_urls = [f"/api/jobs/{big.id}/cluster/"] * (n // 2) + [
        f"/api/jobs/{big.id}/cluster/?step={1000 * (i % 3) + 4}" for i in range(n - n // 2)
    ]
    timed_requests(client, [f"/api/jobs/{source.id}/cluster/"])  # warm-up: imports
    cluster_first = timed_requests(client, cluster_urls[:1])  # computed: nothing kept yet
    cluster_times = timed_requests(client, cluster_urls)
    body = client.get(f"/api/jobs/{big.id}/cluster/").json()
    flagged = sorted({f["key"] for f in body["slow"] if f["scope"] == "rank"})
    print(f"  slow ranks flagged: {flagged} (expected ['{args.ranks // 3}'])")

    sql = [sql_ms(client, big)[0] for _ in range(3)]  # answered from the parts' totals

    dashboard_url = f"/api/jobs/{big.id}/dashboard/"
    dashboard_first = timed_requests(client, [dashboard_url])
    dashboard_times = timed_requests(client, [dashboard_url] * n)

    diff_times = []
    for _ in range(3):
        started = time.perf_counter()
        compare.compare(a, b, a.window)
        diff_times.append(time.perf_counter() - started)
    api_diff = timed_requests(client, [f"/api/compare/?a={a.id}&b={b.id}"] * 3)

    print(f"\n{'case':<58} {'p50 ms':>8} {'p95 ms':>8}")
    for label, samples in {
        f"cluster API, {args.ranks} ranks, {big_events:,} events, first answer": cluster_first,
        "cluster API, same job, requests over 4 steps": cluster_times,
        "dashboard API, same job, first answer": dashboard_first,
        "dashboard API, same job, repeated": dashboard_times,
        f"compare API, 2 × {diff_ranks} ranks": api_diff,
        "compare (in process)": diff_times,
        f"SQL group-by over {args.ranks} ranks' events": [ms / 1000 for ms in sql],
    }.items():
        print(f"{label:<58} {percentile_ms(samples, 50):8.1f} {percentile_ms(samples, 95):8.1f}")
    print(
        f"RESULT cluster_ranks={args.ranks} cluster_p95_ms={percentile_ms(cluster_times, 95):.1f} "
        f"cluster_first_ms={1000 * cluster_first[0]:.1f} "
        f"dashboard_p95_ms={percentile_ms(dashboard_times, 95):.1f} "
        f"dashboard_first_ms={1000 * dashboard_first[0]:.1f} "
        f"diff_s={max(max(diff_times), max(api_diff)):.3f} events={big_events} "
        f"prepare_s={prepare_s:.1f} "
        f"insights_done={int(insights.status == 'done')} insights_s={insights_s:.1f} "
        f"insights_again_s={again_s:.1f} "
        f"insights_peak_rss_mb={peak_rss_mb():.0f} analyses_mb={analyses_mb(insights):.1f} "
        f"sql_group_by_ms={sorted(sql)[1]:.0f}"
    )


if __name__ == "__main__":
    main()
