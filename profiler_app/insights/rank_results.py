"""Each rank's insights result (``pure.by_rank.RankResult``) kept on disk: an insights run reads
again only the ranks whose parts changed since a run computed them, in the window and with the
analysis and recommendation parameters asked for (a new chunk of one rank of a 1,024-rank job
reads that rank, not 1,024). Kept with the job's stores (``storage.kept_key``): a result that is
missing, stale or unreadable is computed again; the job's go with the job.

A result is a pickle, signed with the server's secret key: one not written by this server (a
bucket others can write to, say) is never unpickled."""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import pickle
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from django.utils.crypto import salted_hmac

import tracefmt
from profiler_app.core import storage
from profiler_app.core.models import TrainingJob
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
    key = _key(job_id, rank, parts, params, window)
    kept = _load(key)
    if kept is not None:
        return kept
    trace = rank_trace(rank, parts)
    result = read_rank(trace, params, window)
    del trace
    _keep(key, result)
    if not TrainingJob.objects.filter(pk=job_id).exists():
        # Deleted while the rank was read: its stores, and its results, went before this one
        # was written. (Deleted after this check: the stores' removal takes it.)
        storage.remove_kept(job_id)
    return result


def _key(
    job_id: int, rank: int, parts: list[PartSummary], params: Mapping[str, Any], window: str
) -> str:
    # A parse writes a new summary row and store: either changes the key.
    stores = [(p.part_id, p.pk, p.store_path, p.part.finished_at) for p in parts]
    key = repr((_code_digest(), stores, depends_on(params, window)))
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return storage.kept_key(job_id, f"rank-{rank}/{window}/{digest}.pickle")


def _signature(data: bytes) -> bytes:
    return salted_hmac(__name__, data, algorithm="sha256").digest()


def _load(key: str) -> RankResult | None:
    try:
        blob = storage.read_kept(key)
    except storage.StorageError:
        log.warning("Kept insights result %s unreadable: computed again", key, exc_info=True)
        return None
    if blob is None:
        return None
    size = hashlib.sha256().digest_size
    signature, data = blob[:size], blob[size:]
    if not hmac.compare_digest(signature, _signature(data)):  # cut short, or not ours
        log.warning("Kept insights result %s is not whole: computed again", key)
        return None
    try:
        result = pickle.loads(data)  # signed by this server: written by ``_keep``
    except Exception:  # from another version of a library: computed again
        log.warning("Kept insights result %s unreadable: computed again", key, exc_info=True)
        return None
    return result if isinstance(result, RankResult) else None


def _keep(key: str, result: RankResult) -> None:
    """Keeps the rank's result in place of its earlier ones in the window (other parts or
    parameters: one kept per rank and window, the latest). A failure costs the next run a
    read, no more."""
    data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        storage.keep(key, _signature(data) + data)
    except (OSError, storage.StorageError):
        log.warning("Could not keep the insights result %s", key, exc_info=True)
