"""The Call tree page's numbers: host threads nested into frames, computed in the web process
from timeline stores: one part's, or all the parts of one process (a node's rank: a collector
job's chunks), their frames of the same path of names summed.

On demand rather than at ingest: a tree depends on the threads chosen (any subset), the
direction and the viewer's window of the job, which can change after parsing; the nesting of a
part's host events is the expensive step and it is kept in a bounded cache per (part, store,
threads, window), so switching direction, pruning or listing occurrences reuses it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from cachetools import LRUCache, cached
from cachetools.keys import hashkey
from django.conf import settings
from django.db.models import Count, Q

from profiler_app.calltree.pure import tree as calltree
from profiler_app.core.models import PartState, TrainingJob
from profiler_app.profiles.figures import window_info
from profiler_app.profiles.models import PartSummary, Step, TimelineTrack
from profiler_app.profiles.pure.links import TimeRange, timeline_url
from profiler_app.traces.store_layout import EVENTS_FILE
from profiler_app.traces.timeline_read import TimelineReader
from profiler_app.traces.window import COMPLETE_STEPS

MAX_FRAMES = 20000
# A process's parts one tree sums at most (its latest ones): a day's collector job has
# thousands of chunks, each a store to read.
MAX_PROCESS_PARTS = 64
OTHER_LABEL = "(other)"


class UnknownPart(Exception):
    pass


class UnknownThreads(Exception):
    pass


class UnknownRank(Exception):
    pass


def _summaries(job: TrainingJob):
    return (
        PartSummary.objects.filter(job=job, part__state=PartState.DONE)
        .select_related("node")
        .order_by("rank", "part_id")
    )


def _chosen_parts(
    summaries: list[PartSummary], part_id: int | None, rank: int | None, node: str | None
) -> list[PartSummary]:
    """The parts a tree is made of: the one asked for; else every part of the process asked
    for (``rank`` on ``node``, by default the first node running it); else every part of the
    job's first process (lowest rank)."""
    if part_id is not None:
        found = [s for s in summaries if s.part_id == part_id]
        if not found:
            raise UnknownPart(part_id)
        return found
    if rank is None:
        if not summaries:
            return []
        rank, node = summaries[0].rank, summaries[0].node.name
    running = [s for s in summaries if s.rank == rank]
    node = node if node is not None else (running[0].node.name if running else None)
    found = [s for s in running if s.node.name == node]
    if not found:
        raise UnknownRank(rank, node)
    return sorted(found, key=lambda s: (s.start_ns is None, s.start_ns or 0, s.part_id))


def _recorded(parts: list[PartSummary]) -> list[PartSummary]:
    """The parts where the profiler recorded something: not a collector chunk whose steps
    are all annotations only (outside Kineto's windows). The latest ``MAX_PROCESS_PARTS``."""
    uncaptured = set(
        Step.objects.filter(part_id__in=[s.part_id for s in parts])
        .values("part_id")
        .annotate(n_captured=Count("id", filter=Q(captured=True)))
        .filter(n_captured=0)
        .values_list("part_id", flat=True)
    )
    recorded = [s for s in parts if s.part_id not in uncaptured] or parts
    return recorded[-MAX_PROCESS_PARTS:]


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


@dataclass(frozen=True)
class _PartThreads:
    """One part's host threads with events, and every host event of theirs."""

    summary: PartSummary
    store: Path
    signature: int
    complete_steps: bool
    everything: calltree.Events
    listed: list[dict]  # track, label, events, steps

    def events(self, tracks: tuple[int, ...]) -> tuple[calltree.Events, list[str]]:
        """The events of ``tracks``, every step as one frame, and the names of their ids."""
        if tracks == tuple(t["track"] for t in self.listed):
            events = self.everything
        else:
            events = _events(self.store, self.signature, tracks, self.complete_steps)
        return calltree.steps_as_one(events, TimelineReader(self.store).strings)

    def stepping(self) -> tuple[int, ...]:
        """The thread that ran the training steps, else every thread with events."""
        found = calltree.step_thread(self.everything)
        return tuple(t["track"] for t in self.listed) if found is None else (found,)


def _part_threads(summary: PartSummary, window: str) -> _PartThreads:
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
    return _PartThreads(summary, store, signature, complete_steps, everything, listed)


def _selection(summary, window: str, threads: list[int] | None):
    """The nested events of the chosen threads (by default the thread that ran the training
    steps, else every host thread) and the names of their ids, and the threads listed with
    their host and step events."""
    part = _part_threads(summary, window)
    with_events = tuple(t["track"] for t in part.listed)
    chosen = part.stepping() if threads is None else tuple(sorted(set(threads)))
    unknown = set(chosen) - set(with_events)
    if unknown:
        raise UnknownThreads(sorted(unknown))
    events, names = part.events(chosen)
    return events, names, part.listed, chosen


@dataclass(frozen=True)
class _Process:
    """Several parts of one process: their threads listed once per label (``track`` is the
    index in that list), the events chosen in each part, and one table of their names."""

    parts: list[_PartThreads]
    events: list[calltree.Events]
    part_names: list[list[str]]  # the names of each part's events' ids
    listed: list[dict]
    chosen: tuple[int, ...]
    trees: list[calltree.Tree]  # each part's top-down tree, names in ``names``
    names: list[str]


def _process(summaries: list[PartSummary], window: str, threads: list[int] | None) -> _Process:
    """The chosen threads of a process's parts: by default each part's thread that ran the
    training steps (a thread's id can differ from one capture to the next)."""
    parts = [_part_threads(s, window) for s in summaries]
    index: dict[str, int] = {}
    listed: list[dict] = []
    for part in parts:
        for t in part.listed:
            if t["label"] not in index:
                index[t["label"]] = len(listed)
                listed.append({"track": len(listed), "label": t["label"], "events": 0, "steps": 0})
            merged = listed[index[t["label"]]]
            merged["events"] += t["events"]
            merged["steps"] += t["steps"]
    labels = [{t["track"]: index[t["label"]] for t in part.listed} for part in parts]
    if threads is None:
        tracks = [part.stepping() for part in parts]
        chosen = tuple(
            sorted({label[t] for label, ts in zip(labels, tracks, strict=True) for t in ts})
        )
    else:
        chosen = tuple(sorted(set(threads)))
        unknown = set(chosen) - set(range(len(listed)))
        if unknown:
            raise UnknownThreads(sorted(unknown))
        tracks = [tuple(t for t, i in label.items() if i in chosen) for label in labels]
    events, part_names = zip(
        *(part.events(ts) for part, ts in zip(parts, tracks, strict=True)), strict=True
    )
    table: dict[str, int] = {}
    trees = []
    for part_events, strings in zip(events, part_names, strict=True):
        tree, _ = calltree.top_down(part_events)
        ids, inverse = np.unique(tree.name, return_inverse=True)
        named = np.array([table.setdefault(strings[i], len(table)) for i in ids.tolist()])
        trees.append(replace(tree, name=named[inverse.ravel()] if len(ids) else tree.name))
    return _Process(parts, list(events), list(part_names), listed, chosen, trees, list(table))


def tree(
    job, window: str, part_id, threads, inverted: bool, min_ns: int, rank=None, node=None
) -> dict:
    """The call tree of one part, or of one process's parts, in ``window`` (its viewer's,
    ``TrainingJob.window_for``)."""
    summaries = list(_summaries(job))
    chosen_parts = _chosen_parts(summaries, part_id, rank, node)
    body = {
        "job": job.id,
        "part": None,
        "rank": None,
        "node": None,
        "summed_parts": [],
        "max_summed_parts": MAX_PROCESS_PARTS,
        "parts": _parts(summaries),
        "threads": [],
        "selected": [],
        "inverted": inverted,
        "window": window,
        "window_label": window_info(job, window)["label"],
        "total_ns": 0,
        "frames": 0,
        "names": [],
        "name_ids": [],
        "tree": {"parent": [], "name": [], "total_ns": [], "self_ns": [], "count": []},
    }
    if not chosen_parts:
        return body
    if len(chosen_parts) == 1:
        summary = chosen_parts[0]
        events, names, listed, chosen = _selection(summary, window, threads)
        full, _ = calltree.top_down(events)
        body["part"], body["summed_parts"] = summary.part_id, [summary.part_id]
    else:
        summed = _recorded(chosen_parts)
        process = _process(summed, window, threads)
        listed, chosen, names = process.listed, process.chosen, process.names
        full = calltree.merge(process.trees)
        body["rank"], body["node"] = chosen_parts[0].rank, chosen_parts[0].node.name
        body["summed_parts"] = [s.part_id for s in summed]
    if inverted:
        full = calltree.bottom_up(full)
    shown = calltree.prune(full, min_ns, MAX_FRAMES)
    ids, local = np.unique(shown.name, return_inverse=True)
    strings = [OTHER_LABEL if i == calltree.OTHER else names[i] for i in ids.tolist()]
    return {
        **body,
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


def occurrences(
    job, window: str, part_id, threads, inverted: bool, path: list[int], limit: int, rank=None,
    node=None,
) -> dict:  # fmt: skip
    """The events at frame ``path`` (the tree's name ids) in time order, across the parts of
    the tree asked for."""
    chosen_parts = _chosen_parts(list(_summaries(job)), part_id, rank, node)
    if not chosen_parts:
        return {"part": None, "count": 0, "results": []}
    origin = int(min((s.start_ns for s in chosen_parts if s.start_ns is not None), default=0))
    found: list[tuple[int, PartSummary, calltree.Events, int, str]] = []
    if len(chosen_parts) == 1:
        summary = chosen_parts[0]
        events, _, listed, _ = _selection(summary, window, threads)
        found = _found(summary, events, listed, calltree.occurrences(events, path, inverted))
    else:
        process = _process(_recorded(chosen_parts), window, threads)
        names = [process.names[g] for g in path if 0 <= g < len(process.names)]
        pieces = zip(process.parts, process.events, process.part_names, strict=True)
        for part, events, strings in pieces:
            local = {name: i for i, name in enumerate(strings)}
            if len(names) < len(path) or any(name not in local for name in names):
                continue  # a frame this part never reached
            at = calltree.occurrences(events, [local[n] for n in names], inverted)
            found += _found(part.summary, events, part.listed, at)
        found.sort(key=lambda f: f[0])
    results = []
    for start, summary, events, i, thread in found[:limit]:
        dur = int(events.dur[i])
        event = f"{summary.part_id}:@{int(events.row[i])}"
        where = TimeRange(start, start + dur, summary.node.name, -1, summary.rank, event)
        results.append(
            {
                "start_ns": str(start),
                "offset_ns": start - origin,
                "dur_ns": dur,
                "self_ns": int(events.self_ns[i]),
                "track": int(events.track[i]),
                "thread": thread,
                "event": event,
                "timeline_url": timeline_url(where, job_id=job.id),
            }
        )
    one = chosen_parts[0].part_id if len(chosen_parts) == 1 else None
    return {"part": one, "count": len(found), "results": results}


def _found(
    summary: PartSummary, events: calltree.Events, listed: list[dict], at: np.ndarray
) -> list[tuple[int, PartSummary, calltree.Events, int, str]]:
    """The occurrences ``at`` (indexes into ``events``) as (start, part, events, index,
    thread label)."""
    labels = {t["track"]: t["label"] for t in listed}
    return [
        (int(events.start[i]), summary, events, i, labels.get(int(events.track[i]), ""))
        for i in at.tolist()
    ]
