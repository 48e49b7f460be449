"""Each rank's insights facts (``pure.by_rank.RankFacts``) kept on disk, with the job's stores:
read by a worker of the parses once the rank's parts are parsed, in both windows, and read
again only when the rank's parts, the window's facts or the analysis parameters changed (a new
chunk of one rank of a 1,024-rank job reads that rank, not 1,024). A change of the
recommendations' parameters judges the kept facts again without reading a rank. A kept result
that is missing, stale or unreadable is computed again; the job's go with the job.

A result is a pickle, signed with the server's secret key: one not written by this server (a
bucket others can write to, say) is never unpickled."""

from __future__ import annotations

import hashlib
import hmac
import logging
import pickle
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from django.utils.crypto import salted_hmac

import tracefmt
from profiler_app.analysis import RankTrace
from profiler_app.core import storage
from profiler_app.core.models import TrainingJob
from profiler_app.insights.inputs import rank_parts, rank_trace
from profiler_app.insights.pure.by_rank import (
    RankFacts,
    RankResult,
    depends_on,
    judge_facts,
    read_facts,
)
from profiler_app.lib.code_digest import code_digest
from profiler_app.profiles.models import PartSummary

log = logging.getLogger(__name__)

# The code a result comes from: any change to it (a new release) computes every result again.
_APP = Path(__file__).resolve().parent.parent
_CODE = (
    _APP / "insights" / "pure",
    _APP / "analysis",
    _APP / "traces",
    Path(tracefmt.__file__).resolve().parent,
)


def rank_results(job_id: int, params: Mapping[str, Any], window: str) -> Iterator[RankResult]:
    """Each rank's result in rank order: its facts, kept or read (and then kept), judged with
    ``params``; one rank at a time."""
    for rank, parts in rank_parts(job_id):
        yield judge_facts(kept_or_read(job_id, rank, parts, params, (window,))[window], params)


def kept_or_read(
    job_id: int,
    rank: int,
    parts: list[PartSummary],
    params: Mapping[str, Any],
    windows: Iterable[str],
) -> dict[str, RankFacts]:
    """The rank's facts in each of ``windows``, kept for exactly these parts and analysis
    parameters; those missing read from its stores (once for every window), and kept."""
    keys = {window: _key(job_id, rank, parts, params, window) for window in windows}
    found = {window: facts for window, key in keys.items() if (facts := _load(key)) is not None}
    missing = [window for window in keys if window not in found]
    if not missing:
        return found
    trace = rank_trace(rank, parts)
    read = read_rank(trace, params, missing)
    del trace
    for window in missing:
        _keep(keys[window], read[window])
    if not TrainingJob.objects.filter(pk=job_id).exists():
        # Deleted while the rank was read: its stores, and its results, went before these
        # were written. (Deleted after this check: the stores' removal takes them.)
        storage.remove_kept(job_id)
    return {**found, **read}


def read_rank(
    trace: RankTrace, params: Mapping[str, Any], windows: list[str]
) -> dict[str, RankFacts]:
    """The rank's facts read from its events (``pure.by_rank.read_facts``): the one place the
    insights read a rank."""
    return read_facts(trace, params, windows)


def _key(
    job_id: int, rank: int, parts: list[PartSummary], params: Mapping[str, Any], window: str
) -> str:
    # A parse writes a new summary row and store: either changes the key.
    stores = [(p.part_id, p.pk, p.store_path, p.part.finished_at) for p in parts]
    key = repr((code_digest(_CODE), stores, depends_on(params, window)))
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return storage.kept_key(job_id, f"rank-{rank}/{window}/{digest}.pickle")


def _signature(data: bytes) -> bytes:
    return salted_hmac(__name__, data, algorithm="sha256").digest()


def _load(key: str) -> RankFacts | None:
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
    return result if isinstance(result, RankFacts) else None


def _keep(key: str, result: RankFacts) -> None:
    """Keeps the rank's facts in place of its earlier ones in the window (other parts or
    analysis parameters: one kept per rank and window, the latest). A failure costs the next
    run a read, no more."""
    data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        storage.keep(key, _signature(data) + data)
    except (OSError, storage.StorageError):
        log.warning("Could not keep the insights result %s", key, exc_info=True)
