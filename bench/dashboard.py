"""Dashboard and job-list API latency (server side, in process) on real ingested data.

Builds, in a fresh database: the largest shared trace as one job; a synthetic 16-rank job of
≥ 10M events (the largest shared trace replicated with shifted timestamps, parsed by the real
ingest for every rank); and 10,000 more jobs for the list. Then times the whole-dashboard
request for both jobs and job-list pages, and prints p50/p95 per case.

    .venv/bin/python bench/dashboard.py [--ranks 16] [--copies 14] [--requests 60]

Last line: RESULT dashboard_p95_ms=<n> joblist_p95_ms=<n> events=<n>
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import DATA, LARGEST_SHARED, ROOT, in_bench_database, synthesize  # noqa: E402


def percentile_ms(samples: list[float], q: float) -> float:
    return float(np.percentile(np.array(samples) * 1000, q))


def timed_requests(client, urls: list[str]) -> list[float]:
    elapsed = []
    for url in urls:
        start = time.perf_counter()
        response = client.get(url)
        elapsed.append(time.perf_counter() - start)
        assert response.status_code == 200, (url, response.status_code)
    return elapsed


def ingest_ranks(job, path: Path, ranks: int) -> int:
    """Stores the file once, then parses it as each rank's part; returns the events parsed."""
    from profiler_app.core.logic import PartSource, store_part
    from profiler_app.core.models import Node, ProfilePart
    from profiler_app.ingest import logic
    from profiler_app.profiles.models import PartSummary

    with path.open("rb") as stream:
        first, _ = store_part(job, PartSource("algo-1", 0, "kineto", path.name), stream)
    parts = [first]
    for rank in range(1, ranks):
        # Eight GPUs (ranks) per node, as on a p4d/p5 instance.
        node, _ = Node.objects.get_or_create(job=job, name=f"algo-{rank // 8 + 1}")
        parts.append(
            ProfilePart.objects.create(
                job=job,
                node=node,
                rank=rank,
                kind="kineto",
                original_name=path.name,
                size_bytes=first.size_bytes,
                sha256=f"{first.sha256[:56]}{rank:08d}",
                file=first.file.name,
            )
        )
    for part in parts:
        started = time.perf_counter()
        assert logic.claim(part.id, "bench")
        logic.parse_claimed_part(part.id, "bench")
        part.refresh_from_db()
        assert part.state == "done", part.error
        print(f"  parsed rank {part.rank} in {time.perf_counter() - started:.1f}s", flush=True)
    return sum(PartSummary.objects.filter(job=job).values_list("n_events", flat=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--copies", type=int, default=14, help="copies of the trace per rank")
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--work", type=Path, default=ROOT / "var" / "bench")
    args = parser.parse_args()

    args.work.mkdir(parents=True, exist_ok=True)
    synthetic = synthesize(
        DATA / LARGEST_SHARED, args.copies, args.work / f"synthetic-x{args.copies}.pt.trace.json.gz"
    )
    in_bench_database("profiler_bench_dashboard", lambda: run(args, synthetic))


def run(args: argparse.Namespace, synthetic: Path) -> None:
    """The benchmark itself, in its database."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from profiler_app.core.models import TrainingJob

    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    client = Client()
    client.force_login(user)

    print(f"ingesting {LARGEST_SHARED} …", flush=True)
    largest = TrainingJob.objects.create(name="largest-shared", owner=user, status="completed")
    largest_events = ingest_ranks(largest, DATA / LARGEST_SHARED, 1)
    print(f"ingesting a {args.ranks}-rank job of {synthetic.name} per rank …", flush=True)
    big = TrainingJob.objects.create(name="synthetic-16", owner=user, status="completed")
    big_events = ingest_ranks(big, synthetic, args.ranks)

    TrainingJob.objects.bulk_create(
        TrainingJob(name=f"job-{i:05d}", owner=user, status="completed") for i in range(args.jobs)
    )
    n = args.requests
    cases = {
        f"dashboard, largest shared trace ({largest_events:,} events)": timed_requests(
            client, [f"/api/jobs/{largest.id}/dashboard/"] * n
        ),
        f"dashboard, {args.ranks}-rank synthetic job ({big_events:,} events)": timed_requests(
            client, [f"/api/jobs/{big.id}/dashboard/"] * n
        ),
        f"job list, {args.jobs + 2:,} jobs, 50 per page": timed_requests(
            client, [f"/api/jobs/?page={1 + (i * 37) % 200}" for i in range(n)]
        ),
        "job list, search + status filter": timed_requests(
            client, [f"/api/jobs/?search=job-0{i % 10}&status=completed" for i in range(n)]
        ),
    }
    print(f"\n{'case':<62} {'p50 ms':>8} {'p95 ms':>8}")
    for label, samples in cases.items():
        print(f"{label:<62} {percentile_ms(samples, 50):8.1f} {percentile_ms(samples, 95):8.1f}")
    dashboard_p95 = max(percentile_ms(s, 95) for k, s in cases.items() if "dashboard" in k)
    joblist_p95 = max(percentile_ms(s, 95) for k, s in cases.items() if "job list" in k)
    print(
        f"RESULT dashboard_p95_ms={dashboard_p95:.1f} joblist_p95_ms={joblist_p95:.1f} "
        f"events={big_events}"
    )


if __name__ == "__main__":
    main()
