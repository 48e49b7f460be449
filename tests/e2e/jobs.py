"""Jobs the e2e tests show, loaded for the person who opens the pages."""

from pathlib import Path

from profiler_app.core.logic import PartSource, store_part
from profiler_app.core.models import LoadedProfile, PartState, TrainingJob
from tests.ingest.helpers import wait_parsed
from tests.insights.test_insights_api import wait_insights
from tests.timeline.jobs import parse_job


def loaded_job(user, name: str, parts: list[tuple[str, int, str]], **fields) -> TrainingJob:
    """parse_job's job of ``parts`` (traces under tests/data, parsed in this process), loaded
    for ``user``."""
    job = parse_job(user, name, parts, **fields)
    LoadedProfile.objects.create(user=user, job=job)
    return job


def worker_processed_job(user, name: str, path: Path, node: str = "algo-1") -> TrainingJob:
    """A completed job of the one trace at ``path`` (rank 0 of ``node``), made as an upload makes
    it (the live worker parses it and computes its insights), and loaded for ``user``."""
    job = TrainingJob.objects.create(name=name, owner=user, status="completed")
    with path.open("rb") as f:
        part, _ = store_part(job, PartSource(node, 0, "kineto", path.name), f)
    [parsed] = wait_parsed(part.id)  # the worker parses it, then runs the insights
    assert parsed.state == PartState.DONE, parsed.error
    wait_insights(job)
    LoadedProfile.objects.create(user=user, job=job)
    return job
