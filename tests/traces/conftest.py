"""Each shared trace is ingested once per test session; tests read the results."""

from pathlib import Path

import pytest

from profiler_app.traces import ingest_trace
from tests.traces.expected import DATA

_cache: dict[str, object] = {}


@pytest.fixture(scope="session")
def ingested(tmp_path_factory):
    def get(trace: str):
        if trace not in _cache:
            store = Path(tmp_path_factory.mktemp("store")) / "store"
            _cache[trace] = ingest_trace(DATA / trace, "kineto", store)
        return _cache[trace]

    return get
