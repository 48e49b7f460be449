"""Jobs whose parts the real ingest code parsed (called directly, as a worker would)."""

from pathlib import Path

from profiler_app.core.logic import PartSource, store_part
from profiler_app.core.models import PartState, TrainingJob
from profiler_app.ingest import logic as ingest
from tests.traces.expected import DATA


def parse_paths(owner, name: str, paths: list[tuple[str, int, Path]], **fields) -> TrainingJob:
    """A job with one part per (node, rank, trace file), each parsed by the ingest."""
    job = TrainingJob.objects.create(name=name, owner=owner, **fields)
    for node, rank, path in paths:
        with path.open("rb") as stream:
            part, _ = store_part(job, PartSource(node, rank, "kineto", path.name), stream)
        assert ingest.claim(part.id, "test-task")
        ingest.parse_claimed_part(part.id, "test-task")
        part.refresh_from_db()
        assert part.state == PartState.DONE, part.error
    return job


def parse_job(owner, name: str, parts: list[tuple[str, int, str]], **fields) -> TrainingJob:
    """A job with one part per (node, rank, trace under tests/data), each parsed."""
    return parse_paths(owner, name, [(node, rank, DATA / t) for node, rank, t in parts], **fields)
