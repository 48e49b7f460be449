"""Where an insights run's time goes, on a job like the soak's: three real traces, two of them
one rank. Ingests them into a fresh database in this process (not timed), then runs the
insights computation ``--runs`` times under cProfile and prints the functions that took most.

    .venv/bin/python bench/insights_cost.py [--traces a.json.gz b.json.gz c.json.gz] [--runs 3]

The last line reads ``RESULT insights_run_s=<median seconds of one run> parse_s=<seconds to
parse the three parts>``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import DATA, in_bench_database  # noqa: E402

DEFAULT = [
    "resnet50_pt18_workers4.pt.trace.json.gz",
    "nccl_rank0.json.gz",
    "gpu_training_rank0.pt.trace.json.gz",
]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--traces", nargs=3, default=DEFAULT)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    in_bench_database("profiler_insights_cost", lambda: run(args))


def run(args: argparse.Namespace) -> None:
    from django.contrib.auth import get_user_model

    from profiler_app.core.logic import PartSource, store_part
    from profiler_app.core.models import TrainingJob
    from profiler_app.ingest.tasks import ingest_part
    from profiler_app.insights import logic

    user = get_user_model().objects.create_user("bench")
    job = TrainingJob.objects.create(name="insights-cost", owner=user)
    started = time.perf_counter()
    for rank, name in zip((0, 0, 1), args.traces, strict=True):
        with (DATA / name).open("rb") as f:
            part, _ = store_part(job, PartSource("algo-1", rank, "kineto", name), f)
        ingest_part.apply(args=[part.id])
    parse_s = time.perf_counter() - started

    times = []
    profile = cProfile.Profile()
    for _ in range(args.runs):
        started = time.perf_counter()
        profile.enable()
        fields = logic._compute(job.id, job.window)
        profile.disable()
        times.append(time.perf_counter() - started)
        assert fields["status"] == "done", fields.get("error")
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(args.top)
    print(out.getvalue())
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(args.top)
    print(out.getvalue())
    print(f"runs (s): {', '.join(f'{t:.2f}' for t in times)}; parse of the 3 parts {parse_s:.2f} s")
    print(f"RESULT insights_run_s={statistics.median(times):.2f} parse_s={parse_s:.2f}")


if __name__ == "__main__":
    main()
