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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings

import tracefmt
from profiler_app.analysis.cluster import collective_waits_by_window
from profiler_app.analysis.frames import JobData
from profiler_app.core import storage
from profiler_app.core.models import TrainingJob
from profiler_app.insights.inputs import rank_parts, rank_trace
from profiler_app.insights.pure.by_rank import (
    JobFacts,
    RankFacts,
    combine_facts,
    depends_on,
    read_facts,
)
from profiler_app.insights.summaries import series_lines, tables_json_text
from profiler_app.lib.code_digest import code_digest
from profiler_app.lib.one_at_a_time import one_at_a_time
from profiler_app.profiles.models import PartSummary

log = logging.getLogger(__name__)
Kept = TypeVar("Kept")
# How long a reader of a rank waits for another one reading it (what that one keeps serves
# both) before it reads the rank itself: longer than any rank takes to read.
RANK_READ_WAIT_S = 600.0

# The code a result comes from: any change to it (a new release) computes every result again.
_APP = Path(__file__).resolve().parent.parent
_CODE = (
    _APP / "insights" / "pure",
    _APP / "analysis",
    _APP / "traces",
    Path(tracefmt.__file__).resolve().parent,
)
# ...and a job's combination of them: its analyses' JSON too.
_JOB_CODE = (*_CODE, _APP / "insights" / "summaries.py")


@dataclass(frozen=True)
class KeptJob:
    """A job's ranks combined in a window (``job_facts``): its analyses as the pages show
    them (JSON text: written to the database as it is) and its facts. Kept beside the ranks'
    own, for the same ranks' facts: a run that changes no rank (a rule's parameter) reads two
    files, not one per rank, and does not rebuild 25 MB of analyses for 1,024 ranks."""

    key: str  # which ranks' facts it combines
    analyses: str
    facts: JobFacts


def job_facts(job_id: int, params: Mapping[str, Any], window: str) -> KeptJob:
    """The job's ranks combined in ``window`` with the analysis parameters of ``params``: kept,
    or combined from each rank's facts (kept or read, one rank at a time) and kept."""
    ranks = list(rank_parts(job_id))
    keys = [_key(job_id, rank, parts, params, window) for rank, parts in ranks]
    digest = hashlib.sha256(repr((code_digest(_JOB_CODE), keys)).encode()).hexdigest()[:32]
    # Two files: the analyses' JSON as it is, the facts pickled (one 55 MB pickle of both
    # took as much again to write, at the run's peak of memory).
    facts_key = storage.kept_key(job_id, f"job/{window}/{digest}.pickle")
    analyses_key = storage.kept_key(job_id, f"job-analyses/{window}/{digest}.json")
    found, text = _load(facts_key, JobFacts), _load_bytes(analyses_key)
    if found is not None and text is not None:
        return KeptJob(digest, str(text, "utf-8"), found)
    series = series_lines()
    combined = combine_facts(
        (kept_or_read(job_id, rank, parts, params, (window,))[window] for rank, parts in ranks),
        {name: lines.add for name, lines in series.items()},
    )
    if combined is None:
        kept = KeptJob(
            digest, "{}", JobFacts(JobData.empty().framework, collective_waits_by_window([]), [])
        )
    else:
        tables, facts = combined
        del combined  # each table goes once its JSON is made
        # Names from traces may hold what Postgres refuses in text (NUL): quoted.
        kept = KeptJob(digest, tables_json_text(tables, series), facts)
    _keep(facts_key, kept.facts)
    _keep_bytes(analyses_key, kept.analyses.encode())
    _forget_if_deleted(job_id)
    return kept


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
    found = _kept(keys)
    if len(found) == len(keys):
        return found
    # One reader of a rank at a time: an insights run that comes while a worker of the parses
    # reads the rank (``prepare_rank``) waits for what that one keeps, instead of reading it
    # too (a 2.8M-event rank: 3.5 s of CPU and 0.9 GB more, beside the other reader).
    with one_at_a_time(f"rank-facts/{job_id}/{rank}", RANK_READ_WAIT_S):
        # What another reader kept meanwhile: only the windows not found before are looked for.
        found |= _kept({window: key for window, key in keys.items() if window not in found})
        missing = [window for window in keys if window not in found]
        if not missing:
            return found
        read = read_rank(rank, parts, params, missing)
        for window in missing:
            _keep(keys[window], read[window])
    _forget_if_deleted(job_id)
    return {**found, **read}


def _kept(keys: Mapping[str, str]) -> dict[str, RankFacts]:
    """The facts kept under ``keys`` (window → key), of the windows that have them."""
    return {
        window: facts
        for window, key in keys.items()
        if (facts := _load(key, RankFacts)) is not None
    }


def read_rank(
    rank: int, parts: list[PartSummary], params: Mapping[str, Any], windows: list[str]
) -> dict[str, RankFacts]:
    """The rank's facts read from its events (``pure.by_rank.read_facts``): the one place the
    insights read a rank."""
    return read_facts(lambda: rank_trace(rank, parts), params, windows)


def _key(
    job_id: int, rank: int, parts: list[PartSummary], params: Mapping[str, Any], window: str
) -> str:
    # A parse writes a new summary row and store: either changes the key.
    stores = [(p.part_id, p.pk, p.store_path, p.part.finished_at) for p in parts]
    key = repr((code_digest(_CODE), stores, depends_on(params, window)))
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return storage.kept_key(job_id, f"rank-{rank}/{window}/{digest}.pickle")


def _signature(data: bytes | memoryview) -> bytes:
    """Django's ``salted_hmac(__name__, data)``, without its copy of ``data`` (55 MB)."""
    key = hashlib.sha256((__name__ + settings.SECRET_KEY).encode()).digest()
    return hmac.new(key, data, hashlib.sha256).digest()


def _load(key: str, kind: type[Kept]) -> Kept | None:
    data = _load_bytes(key)
    if data is None:
        return None
    try:
        result = pickle.loads(data)  # signed by this server: written by ``_keep``
    except Exception:  # from another version of a library: computed again
        log.warning("Kept insights result %s unreadable: computed again", key, exc_info=True)
        return None
    return result if isinstance(result, kind) else None


def _load_bytes(key: str) -> memoryview | None:
    """A kept result's bytes, if whole and signed by this server."""
    try:
        blob = storage.read_kept(key)
    except storage.StorageError:
        log.warning("Kept insights result %s unreadable: computed again", key, exc_info=True)
        return None
    if blob is None:
        return None
    size = hashlib.sha256().digest_size
    signature, data = blob[:size], memoryview(blob)[size:]
    if not hmac.compare_digest(signature, _signature(data)):  # cut short, or not ours
        log.warning("Kept insights result %s is not whole: computed again", key)
        return None
    return data


def _keep(key: str, result: RankFacts | JobFacts) -> None:
    """Keeps the rank's facts (or the job's) in place of its earlier ones in the window (other
    parts or analysis parameters: one kept per rank and window, the latest)."""
    _keep_bytes(key, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))


def _keep_bytes(key: str, data: bytes) -> None:
    """Keeps ``data``, signed, in place of the other results in its folder. A failure costs the
    next run a read, no more."""
    try:
        storage.keep(key, _signature(data), data)
    except (OSError, storage.StorageError):
        log.warning("Could not keep the insights result %s", key, exc_info=True)


def _forget_if_deleted(job_id: int) -> None:
    """After results of the job were kept: none stays if the job is gone."""
    if not TrainingJob.objects.filter(pk=job_id).exists():
        # Deleted while the rank was read: its stores, and its results, went before these
        # were written. (Deleted after this check: the stores' removal takes them.)
        storage.remove_kept(job_id)
