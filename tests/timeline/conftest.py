"""Timelines over stores parsed straight from the shared traces (pure tests), and jobs parsed
by the real ingest code (API tests)."""

from pathlib import Path

import pytest

from profiler_app.core.models import TrainingJob
from profiler_app.timeline.pure.index import open_index
from profiler_app.timeline.pure.query import JobTimeline
from profiler_app.timeline.pure.tree import Part
from profiler_app.traces import ingest_trace
from tests.timeline.jobs import parse_job
from tests.traces.expected import DATA

_stores: dict[str, Path] = {}


@pytest.fixture(scope="session")
def store_of(tmp_path_factory):
    """store_of(trace) → the directory of the trace's timeline store (parsed once)."""

    def get(trace: str) -> Path:
        if trace not in _stores:
            directory = Path(tmp_path_factory.mktemp("store")) / "store"
            ingest_trace(DATA / trace, "kineto", directory)
            _stores[trace] = directory
        return _stores[trace]

    return get


@pytest.fixture
def timeline_of(store_of):
    """timeline_of(trace, ...) → a JobTimeline with one part per trace, on nodes algo-1…"""

    def make(*traces: str) -> JobTimeline:
        parts = [
            Part(i + 1, f"algo-{i + 1}", i, None, open_index(store_of(trace)))
            for i, trace in enumerate(traces)
        ]
        return JobTimeline(parts)

    return make


@pytest.fixture
def parsed_job(user):
    """parsed_job(name, [(node, rank, trace), ...]) → a job whose parts ingest has parsed."""

    def make(name: str, parts: list[tuple[str, int, str]]) -> TrainingJob:
        return parse_job(user, name, parts)

    return make
