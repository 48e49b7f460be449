"""What an insights run of a multi-rank job costs once the workers of its parses have read its
ranks, and after a change of the recommendations' parameters or of the window.

The job is built as ``cluster.py`` builds it: one real trace (``nccl_rank0``) parsed by the real
ingest, its rows replicated for every rank (each rank reads the template's store). Then, in
process, in the job's window (complete steps):

- ``prepare_s``: every rank read for the insights as the parse's ``prepare_rank`` does;
- ``prepared_s``: the insights run that follows;
- ``rule_param_s``: a run after a recommendation's parameter changed;
- ``other_window_s``: a run in the other window (whole trace);
- ``cold_s``: a run with nothing kept (every rank read by the run itself).

    .venv/bin/python bench/rank_facts.py [--ranks 8]

Last line: RESULT ranks=<n> prepare_s=<n> prepared_s=<n> rule_param_s=<n> other_window_s=<n>
cold_s=<n>
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster import parse_template, replicate  # noqa: E402
from ingest import in_bench_database  # noqa: E402


def timed_run(job, window: str) -> float:
    """Seconds an insights run in ``window`` takes, as a worker computes it."""
    from profiler_app.insights import logic
    from profiler_app.insights.models import InsightsStatus, JobInsights

    JobInsights.objects.get_or_create(job=job, window=window)
    JobInsights.objects.filter(job=job, window=window).update(status=InsightsStatus.QUEUED)
    started = time.perf_counter()
    logic.compute(job.id, window=window)
    seconds = time.perf_counter() - started
    row = JobInsights.objects.get(job=job, window=window)
    assert row.status == InsightsStatus.DONE, row.error
    return seconds


def prepare(job, ranks: int) -> float:
    """Seconds the parses' ``prepare_rank`` tasks take for every rank, as they are queued."""
    from profiler_app.insights import logic

    started = time.perf_counter()
    both = "window" in inspect.signature(logic.prepare_rank).parameters and (
        inspect.signature(logic.prepare_rank).parameters["window"].default is None
    )
    for rank in range(ranks):
        if both:  # both windows in one read of the rank
            logic.prepare_rank(job.id, rank)
        else:  # the windows the job has insights in
            for window in logic._windows(job.id):
                logic.prepare_rank(job.id, rank, window)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=8)
    args = parser.parse_args()

    in_bench_database("profiler_bench_rank_facts", lambda: run(args))


def run(args: argparse.Namespace) -> None:
    """The benchmark itself, in its database."""
    from django.contrib.auth import get_user_model

    from profiler_app.core import storage
    from profiler_app.core.models import TrainingJob
    from profiler_app.insights.models import RuleOverrides
    from profiler_app.traces.window import COMPLETE_STEPS, WHOLE_TRACE

    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    source = TrainingJob.objects.create(name="template", owner=user, status="completed")
    template, _, span_ns = parse_template(source)
    job = TrainingJob.objects.create(
        name="ranks", owner=user, status="completed", window=COMPLETE_STEPS
    )
    replicate(template, span_ns, job, range(args.ranks), 1, slow=-1)

    prepare_s = prepare(job, args.ranks)
    prepared_s = timed_run(job, COMPLETE_STEPS)
    RuleOverrides.objects.create(job=job, params={"Communication_overlap_pct": 10})
    rule_param_s = timed_run(job, COMPLETE_STEPS)
    other_window_s = timed_run(job, WHOLE_TRACE)
    storage.remove_kept(job.id)
    cold_s = timed_run(job, COMPLETE_STEPS)
    print(
        f"RESULT ranks={args.ranks} prepare_s={prepare_s:.2f} prepared_s={prepared_s:.2f} "
        f"rule_param_s={rule_param_s:.2f} other_window_s={other_window_s:.2f} "
        f"cold_s={cold_s:.2f}"
    )


if __name__ == "__main__":
    main()
