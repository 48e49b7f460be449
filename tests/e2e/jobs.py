"""Jobs the e2e tests show, made as an upload makes them: the live worker parses the part and
runs the insights."""

from pathlib import Path

from profiler_app.core.logic import PartSource, store_part
from profiler_app.core.models import LoadedProfile, PartState, TrainingJob
from tests.ingest.helpers import wait_parsed
from tests.insights.test_insights_api import wait_insights


def worker_processed_job(user, name: str, path: Path, node: str = "algo-1") -> TrainingJob:
    """A completed job of the one trace at ``path`` (rank 0 of ``node``), parsed and its insights
    computed by the live worker, and loaded for ``user``."""
    job = TrainingJob.objects.create(name=name, owner=user, status="completed")
    with path.open("rb") as f:
        part, _ = store_part(job, PartSource(node, 0, "kineto", path.name), f)
    [parsed] = wait_parsed(part.id)  # the worker parses it, then runs the insights
    assert parsed.state == PartState.DONE, parsed.error
    wait_insights(job)
    LoadedProfile.objects.create(user=user, job=job)
    return job
