"""Each parsed part's analyses in both windows (``analysis.part_figures``), kept beside its
store: the worker that parsed the part computes them from the store still on its disk (before
it goes to a bucket) and keeps them once the part is saved; the run history reads them instead
of the store.

A part parsed before they were kept, or by other analysis code (a new release), has them
computed from its store on first need and kept by the task that needs them; a web request
computes them without keeping (it never writes beside a store). They are JSON, named after the
part's store (a new parse is a new store: it never reads an old parse's analyses) and the code
that computed them, and go with the job's stores."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import tracefmt
from profiler_app.analysis.part_figures import OPERATOR_COLUMNS, PartFigures, store_part_figures
from profiler_app.core import storage
from profiler_app.core.models import TrainingJob
from profiler_app.lib.code_digest import code_digest
from profiler_app.profiles.models import PartSummary
from profiler_app.traces.window import COMPLETE_STEPS, WHOLE_TRACE

log = logging.getLogger(__name__)

WINDOWS = (COMPLETE_STEPS, WHOLE_TRACE)
_APP = Path(__file__).resolve().parent.parent
# The code the analyses come from: any change to it computes them again.
_CODE = (_APP / "analysis", _APP / "traces", Path(tracefmt.__file__).resolve().parent)

PartAnalyses = dict[str, PartFigures]  # by window


def compute(store_dir: str | Path, rank: int, part_id: int) -> PartAnalyses:
    """The part's analyses in each window, from its store."""
    return store_part_figures(store_dir, rank, part_id, WINDOWS)


def _key(job_id: int, part_id: int, store_path: str) -> str:
    name = hashlib.sha256(f"{store_path} {code_digest(_CODE)}".encode()).hexdigest()[:32]
    return storage.kept_key(job_id, f"part-{part_id}/{name}.json")


def keep(job_id: int, part_id: int, store_path: str, analyses: PartAnalyses) -> None:
    """Keeps the analyses of the part's store at ``store_path`` in place of earlier ones (of
    an earlier parse or code). A failure costs the next reader a read of the store, no more."""
    data = json.dumps({w: _as_json(f) for w, f in analyses.items()}).encode()
    try:
        storage.keep(_key(job_id, part_id, store_path), data)
    except (OSError, storage.StorageError):
        log.warning("Could not keep the analyses of part %s", part_id, exc_info=True)
        return
    if not TrainingJob.objects.filter(pk=job_id).exists():
        # Deleted meanwhile: its stores, and what was kept beside them, went before this.
        storage.remove_kept(job_id)


def kept(summary: PartSummary) -> PartAnalyses | None:
    """The analyses kept for the part's store; None when there are none (or unreadable)."""
    key = _key(summary.job_id, summary.part_id, summary.store_path)
    try:
        blob = storage.read_kept(key)
        if blob is None:
            return None
        found = json.loads(blob)
        return {window: _from_json(found[window]) for window in WINDOWS}
    except (storage.StorageError, ValueError, KeyError, TypeError):
        log.warning("Kept analyses %s unreadable: computed again", key, exc_info=True)
        return None


def of_part(summary: PartSummary, *, keep_missing: bool) -> PartAnalyses:
    """The part's analyses: kept, else computed from its store (and kept when
    ``keep_missing``: a task, never a web request)."""
    found = kept(summary)
    if found is not None:
        return found
    found = compute(storage.store_files(summary.store_path).folder(), summary.rank, summary.part_id)
    if keep_missing:
        keep(summary.job_id, summary.part_id, summary.store_path, found)
    return found


def _as_json(figures: PartFigures) -> dict[str, Any]:
    operators = figures.operators
    return {
        "operators": {
            "name": [str(n) for n in operators["name"]],
            "count": [int(c) for c in operators["count"]],
            "self_ns": [int(s) for s in operators["self_ns"]],
        },
        "host_wait_ns": int(figures.host_wait_ns),
    }


def _from_json(found: dict[str, Any]) -> PartFigures:
    operators = found["operators"]
    frame = pd.DataFrame(
        {
            "name": pd.Series(operators["name"], dtype=object),
            "count": pd.Series(operators["count"], dtype=np.int64),
            "self_ns": pd.Series(operators["self_ns"], dtype=np.int64),
        },
        columns=OPERATOR_COLUMNS,
    )
    return PartFigures(frame, int(found["host_wait_ns"]))
