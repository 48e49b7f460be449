"""Jobs whose parts the real ingest code parsed (called directly, as a worker would)."""

from pathlib import Path

from profiler_app.core.logic import PartSource, store_part
from profiler_app.core.models import PartState, ProfilePart, TrainingJob
from profiler_app.ingest import logic as ingest
from tests.ingest.helpers import wait_parsed
from tests.parse_cache import same_input_parsed_once
from tests.traces.expected import DATA

# The sampled two-rank trace of tests/data, a rank a node, as parse_job takes its parts.
TWO_RANKS = [
    ("algo-1", 0, "multirank_sampled/rank-0.json.gz"),
    ("algo-2", 1, "multirank_sampled/rank-1.json.gz"),
]


def parse_paths(owner, name: str, paths: list[tuple[str, int, Path]], **fields) -> TrainingJob:
    """A job with one part per (node, rank, trace file), each parsed by the ingest."""
    job = TrainingJob.objects.create(name=name, owner=owner, **fields)
    for node, rank, path in paths:
        with path.open("rb") as stream:
            part, _ = store_part(job, PartSource(node, rank, "kineto", path.name), stream)
        parse_stored(part.id)
    return job


def parse_stored(part_id: int) -> ProfilePart:
    """Parses a stored part in this process (a file parsed before in this run is copied:
    ``tests.parse_cache``), or, when a worker left running by an earlier test took its task
    first, waits for that worker to finish it."""
    if ingest.claim(part_id, "test-task"):
        with same_input_parsed_once():
            ingest.parse_claimed_part(part_id, "test-task")
    [part] = wait_parsed(part_id)
    assert part.state == PartState.DONE, part.error
    return part


def parse_job(owner, name: str, parts: list[tuple[str, int, str]], **fields) -> TrainingJob:
    """A job with one part per (node, rank, trace under tests/data), each parsed."""
    return parse_paths(owner, name, [(node, rank, DATA / t) for node, rank, t in parts], **fields)
