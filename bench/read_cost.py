"""What each page the soak's readers load costs the web, alone: SQL queries and milliseconds
per answer (median of ``--repeat``), in this process against a fresh database holding ``--jobs``
jobs of three real traces each (parsed here, insights computed, not timed). The Dashboard is
measured twice: kept (its answer read from the cache, as a job read again is) and computed
(with no cache, as a job read for the first time since a part of it was stored).

    .venv/bin/python bench/read_cost.py [--jobs 30] [--repeat 20]

The last line reads ``RESULT <page>_ms=<median> <page>_queries=<n> ...``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import DATA, in_bench_database  # noqa: E402

TRACES = [
    "resnet50_pt18_workers4.pt.trace.json.gz",
    "nccl_rank0.json.gz",
    "gpu_training_rank0.pt.trace.json.gz",
]
PAGES = ["jobs", "dashboard", "dashboard computed", "summary", "timeline/tracks", "insights"]
NO_CACHE = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    in_bench_database("profiler_read_cost", lambda: run(args))


def run(args: argparse.Namespace) -> None:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import override_settings
    from django.test.utils import CaptureQueriesContext
    from rest_framework.test import APIClient

    from profiler_app.core.logic import PartSource, store_part
    from profiler_app.core.models import TrainingJob
    from profiler_app.ingest.tasks import ingest_part
    from profiler_app.insights import logic

    user = get_user_model().objects.create_user("bench")
    started = time.perf_counter()
    for n in range(args.jobs):
        job = TrainingJob.objects.create(name=f"read-cost-{n}", owner=user)
        for rank, name in zip((0, 0, 1), TRACES, strict=True):
            with (DATA / name).open("rb") as f:
                part, _ = store_part(job, PartSource("algo-1", rank, "kineto", name), f)
            ingest_part.apply(args=[part.id])
        logic.request_run(job.id, delay_s=3600)
        logic.compute(job.id)
    print(f"{args.jobs} jobs parsed in {time.perf_counter() - started:.0f} s")

    client = APIClient()
    client.force_authenticate(user)
    result = []
    for page in PAGES:
        path = (
            "/api/jobs/?ordering=-created_at"
            if page == "jobs"
            else f"/api/jobs/{job.id}/{page.removesuffix(' computed')}/"
        )
        times = []
        for _ in range(args.repeat):
            caches = NO_CACHE if page.endswith(" computed") else settings.CACHES
            with override_settings(CACHES=caches), CaptureQueriesContext(connection) as queries:
                begun = time.perf_counter()
                response = client.get(path)
                times.append((time.perf_counter() - begun) * 1000)
            assert response.status_code == 200, (path, response.status_code)
        median = statistics.median(times)
        print(
            f"{page:20} {median:7.1f} ms  {len(queries):3d} queries  {len(response.content):8d} B"
        )
        key = page.replace("/", "_").replace(" ", "_")
        result.append(f"{key}_ms={median:.1f} {key}_queries={len(queries)}")
    print("RESULT " + " ".join(result))


if __name__ == "__main__":
    main()
