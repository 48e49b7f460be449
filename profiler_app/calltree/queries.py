"""The Call tree page's numbers: one part's host threads nested into frames, computed in the
web process from the part's timeline store.

On demand rather than at ingest: a tree depends on the threads chosen (any subset), the
direction and the viewer's window of the job, which can change after parsing; the nesting of a
part's host events is the expensive step and it is kept in a bounded cache per (part, store,
threads, window), so switching direction, pruning or listing occurrences reuses it.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
from cachetools import LRUCache, cached
from cachetools.keys import hashkey
from django.conf import settings

from profiler_app.calltree.pure import tree as calltree
from profiler_app.core.models import PartState, TrainingJob
from profiler_app.profiles.models import PartSummary, TimelineTrack
from profiler_app.profiles.pure.links import TimeRange, timeline_url
from profiler_app.traces.store_layout import EVENTS_FILE
from profiler_app.traces.timeline_read import TimelineReader
from profiler_app.traces.window import COMPLETE_STEPS

MAX_FRAMES = 20000
OTHER_LABEL = "(other)"


class UnknownPart(Exception):
    pass


class UnknownThreads(Exception):
    pass


def _summaries(job: TrainingJob):
    return (
        PartSummary.objects.filter(job=job, part__state=PartState.DONE)
        .select_related("node")
        .order_by("rank", "part_id")
    )


def _summary(job: TrainingJob, part_id: int | None) -> PartSummary | None:
    summaries = _summaries(job)
    if part_id is None:
        return summaries.first()
    found = summaries.filter(part_id=part_id).first()
    if found is None:
        raise UnknownPart(part_id)
    return found


@cached(
    LRUCache(maxsize=getattr(settings, "CALLTREE_CACHED_EVENTS", 16)),
    key=lambda store, signature, tracks, complete_steps: hashkey(
        str(store), signature, tracks, complete_steps
    ),
    lock=threading.Lock(),
)
def _events(store: Path, signature: int, tracks: tuple[int, ...], complete_steps: bool):
    return calltree.read_host_events(store, list(tracks), complete_steps)


def _host_threads(summary: PartSummary) -> list[dict]:
    rows = TimelineTrack.objects.filter(part_id=summary.part_id, on_device=False).order_by("track")
    return [{"track": t.track, "label": t.label} for t in rows]


def _selection(summary, window: str, threads: list[int] | None):
    """The nested events of the chosen threads (by default the thread that ran the training
    steps, else every host thread), and the threads listed with their host and step events."""
    listed = _host_threads(summary)
    every = tuple(t["track"] for t in listed)
    store = summary.fetch_store()
    signature = (store / EVENTS_FILE).stat().st_mtime_ns
    complete_steps = window == COMPLETE_STEPS
    everything = _events(store, signature, every, complete_steps)
    size = max(every, default=0) + 1
    counts = np.bincount(everything.track, minlength=size)
    steps = np.bincount(everything.track[everything.is_step], minlength=size)
    listed = [
        {**t, "events": int(counts[t["track"]]), "steps": int(steps[t["track"]])} for t in listed
    ]
    listed = [t for t in listed if t["events"]]
    with_events = tuple(t["track"] for t in listed)
    if threads is None:
        stepping = calltree.step_thread(everything)
        chosen = with_events if stepping is None else (stepping,)
    else:
        chosen = tuple(sorted(set(threads)))
    unknown = set(chosen) - set(with_events)
    if unknown:
        raise UnknownThreads(sorted(unknown))
    events = (
        everything if chosen == with_events else _events(store, signature, chosen, complete_steps)
    )
    return events, listed, chosen


def tree(job, window: str, part_id, threads, inverted: bool, min_ns: int) -> dict:
    """The call tree of one part in ``window`` (its viewer's, ``TrainingJob.window_for``)."""
    parts = _parts(list(_summaries(job)))
    summary = _summary(job, part_id)
    body = {
        "job": job.id,
        "part": None,
        "parts": parts,
        "threads": [],
        "selected": [],
        "inverted": inverted,
        "window": window,
        "total_ns": 0,
        "frames": 0,
        "names": [],
        "name_ids": [],
        "tree": {"parent": [], "name": [], "total_ns": [], "self_ns": [], "count": []},
    }
    if summary is None:
        return body
    events, listed, chosen = _selection(summary, window, threads)
    full, _ = calltree.top_down(events)
    if inverted:
        full = calltree.bottom_up(full)
    shown = calltree.prune(full, min_ns, MAX_FRAMES)
    ids, local = np.unique(shown.name, return_inverse=True)
    strings = _strings(summary, ids)
    return {
        **body,
        "part": summary.part_id,
        "threads": listed,
        "selected": list(chosen),
        "total_ns": int(full.total_ns[full.parent < 0].sum()),
        "frames": len(full),
        "names": strings,
        "name_ids": ids.tolist(),
        "tree": {
            "parent": shown.parent.tolist(),
            "name": local.ravel().tolist(),
            "total_ns": shown.total_ns.tolist(),
            "self_ns": shown.self_ns.tolist(),
            "count": shown.count.tolist(),
        },
    }


def _parts(summaries: list[PartSummary]) -> list[dict]:
    """The parts to choose from, each with where its events lie from the job's first event (a
    collector job's parts are its chunks: their times tell them apart)."""
    starts = [s.start_ns for s in summaries if s.start_ns is not None]
    origin = min(starts, default=0)
    return [
        {
            "id": s.part_id,
            "node": s.node.name,
            "rank": s.rank,
            "offset_ns": None if s.start_ns is None else s.start_ns - origin,
            "span_ns": None if s.start_ns is None else (s.end_ns or s.start_ns) - s.start_ns,
        }
        for s in summaries
    ]


def _strings(summary: PartSummary, ids: np.ndarray) -> list[str]:
    strings = TimelineReader(summary.fetch_store()).strings
    return [OTHER_LABEL if i == calltree.OTHER else strings[i] for i in ids.tolist()]


def occurrences(
    job, window: str, part_id, threads, inverted: bool, path: list[int], limit: int
) -> dict:
    summary = _summary(job, part_id)
    if summary is None:
        return {"part": None, "count": 0, "results": []}
    events, listed, _ = _selection(summary, window, threads)
    found = calltree.occurrences(events, path, inverted)
    labels = {t["track"]: t["label"] for t in listed}
    results = []
    for i in found[:limit].tolist():
        start, dur = int(events.start[i]), int(events.dur[i])
        event = f"{summary.part_id}:@{int(events.row[i])}"
        where = TimeRange(start, start + dur, summary.node.name, -1, summary.rank, event)
        results.append(
            {
                "start_ns": str(start),
                "offset_ns": start - int(summary.start_ns or start),
                "dur_ns": dur,
                "self_ns": int(events.self_ns[i]),
                "track": int(events.track[i]),
                "thread": labels.get(int(events.track[i]), ""),
                "event": event,
                "timeline_url": timeline_url(where, job_id=job.id),
            }
        )
    return {"part": summary.part_id, "count": len(found), "results": results}
