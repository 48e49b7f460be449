"""Each rank's insights result (``pure.by_rank.RankResult``) kept on disk: an insights run reads
again only the ranks whose parts changed since a run computed them, in the window and with the
analysis and recommendation parameters asked for (a new chunk of one rank of a 1,024-rank job
reads that rank, not 1,024). A cache in INSIGHTS_RANKS_DIR, per job: a result that is missing,
stale or unreadable is computed again; the job's go with the job."""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import pickle
import shutil
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from django.conf import settings

import tracefmt
from profiler_app.insights.inputs import rank_parts, rank_trace
from profiler_app.insights.pure.by_rank import RankResult, depends_on, read_rank
from profiler_app.profiles.models import PartSummary

log = logging.getLogger(__name__)

# The code a result comes from: any change to it (a new release) computes every result again.
_APP = Path(__file__).resolve().parent.parent
_CODE = (_APP / "insights" / "pure", _APP / "traces", Path(tracefmt.__file__).resolve().parent)


@functools.cache
def _code_digest() -> str:
    # The libraries a result is pickled with too: another pandas may read it back differently.
    digest = hashlib.sha256(f"{np.__version__} {pd.__version__}".encode())
    for folder in _CODE:
        for source in sorted(folder.rglob("*.py")):
            digest.update(source.read_bytes())
    return digest.hexdigest()


def rank_results(job_id: int, params: Mapping[str, Any], window: str) -> Iterator[RankResult]:
    """Each rank's result in rank order, kept or computed (and then kept), one rank at a time."""
    for rank, parts in rank_parts(job_id):
        yield kept_or_read(job_id, rank, parts, params, window)


def kept_or_read(
    job_id: int, rank: int, parts: list[PartSummary], params: Mapping[str, Any], window: str
) -> RankResult:
    """The rank's result kept for exactly these parts, window and parameters; else read from
    its stores, computed and kept."""
    path = _path(job_id, rank, parts, params, window)
    kept = _load(path)
    if kept is not None:
        return kept
    trace = rank_trace(rank, parts)
    result = read_rank(trace, params, window)
    del trace
    _keep(path, result)
    return result


def remove_job(job_id: int) -> None:
    shutil.rmtree(_folder(job_id), ignore_errors=True)


def _folder(job_id: int) -> Path:
    return Path(settings.INSIGHTS_RANKS_DIR) / f"job-{job_id}"


def _path(
    job_id: int, rank: int, parts: list[PartSummary], params: Mapping[str, Any], window: str
) -> Path:
    # A parse writes a new summary row and store: either changes the key.
    stores = [(p.part_id, p.pk, p.store_path, p.part.finished_at) for p in parts]
    key = repr((_code_digest(), stores, depends_on(params, window)))
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return _folder(job_id) / f"rank-{rank}" / window / f"{digest}.pickle"


def _load(path: Path) -> RankResult | None:
    try:
        with path.open("rb") as f:
            # Written by this server (``_keep``) under its data directory, never uploaded.
            result = pickle.load(f)
    except FileNotFoundError:
        return None
    except Exception:  # cut short, or from another version: computed again
        log.warning("Kept insights result %s unreadable: computed again", path, exc_info=True)
        return None
    return result if isinstance(result, RankResult) else None


def _keep(path: Path, result: RankResult) -> None:
    """Writes the rank's result in place of its earlier ones in the window (other parts or
    parameters: one kept per rank and window, the latest). A failure costs the next run a
    read, no more."""
    staging = path.with_name(f".{uuid.uuid4().hex}.tmp")  # two writers: each its own
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with staging.open("wb") as f:
            pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(staging, path)
        for other in path.parent.glob("*.pickle"):
            if other != path:
                other.unlink(missing_ok=True)
    except OSError:
        log.warning("Could not keep the insights result %s", path, exc_info=True)
    finally:
        staging.unlink(missing_ok=True)
