"""One call from an uploaded file to its aggregates and timeline store.

``ingest_trace`` streams the file batch by batch: each batch is normalised, folded into the
aggregates and appended to the timeline store's runs, then dropped. Nothing here touches the
database; the Django side stores the returned frames. Each format has its reader
(``kineto_part``, ``collector_part``); both write through ``part_sink``.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path

from profiler_app.lib.memory import hand_back_freed
from profiler_app.traces.collector_part import ingest_collector
from profiler_app.traces.errors import TraceFormatError
from profiler_app.traces.kineto_part import ingest_kineto
from profiler_app.traces.part_sink import IngestResult, Limits
from profiler_app.traces.process_memory import collector_paused
from profiler_app.traces.xplane import ingest_xplane, is_xplane

KINETO, COLLECTOR = "kineto", "collector"


def ingest_trace(
    path: str | Path,
    kind: str,
    store_dir: str | Path,
    limits: Limits = Limits(),  # noqa: B008 (a frozen dataclass, safe to share)
    progress: Callable[[float], None] | None = None,
    executor: Executor | None = None,
    workers: int = 0,
) -> IngestResult:
    """Parse ``path`` (a Kineto trace, an XPlane profile or a collector chunk) into aggregates and a store.

    Raises ``TraceFormatError`` with a user-readable message for anything unreadable; the
    store directory is removed in that case.
    """
    store_dir = Path(store_dir)
    if store_dir.exists():
        shutil.rmtree(store_dir)
    try:
        with collector_paused():  # the decoded structs hold no cycles
            if kind == KINETO and is_xplane(Path(path)):
                # A trace file from TensorFlow's or JAX's profiler: uploaded as a trace too.
                result = ingest_xplane(Path(path), store_dir, limits, progress, executor, workers)
            elif kind == KINETO:
                result = ingest_kineto(Path(path), store_dir, limits, progress, executor, workers)
            elif kind == COLLECTOR:
                result = ingest_collector(Path(path), store_dir, limits, progress)
            else:
                raise TraceFormatError(f"unknown part kind {kind!r}")
        hand_back_freed()
        return result
    except BaseException:
        shutil.rmtree(store_dir, ignore_errors=True)
        raise
