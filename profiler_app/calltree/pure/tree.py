"""Call trees of a part's host threads: frames keyed by their path of names, with total time,
self time and count, top-down (callers first) or bottom-up (each frame's self time, under the
frame and then its callers).

Nesting and self times are the store's event model (``traces.event_model``), as the timeline,
the operator table and range totals read them. Everything is numpy over whole arrays; the only
Python loops run once per nesting level.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profiler_app.traces.timeline_read import TimelineReader
from tracefmt.kinds import HOST_KINDS
from tracefmt.names import steps_as_one as names_steps_as_one

OTHER = -1  # the name id of a pruned frame's "(other)"
_COLUMNS = [
    "track",
    "kind",
    "name",
    "start_ns",
    "dur_ns",
    "parent",
    "self_ns",
    "is_step",
    "in_complete_steps",
    "captured",
]


@dataclass(frozen=True)
class Events:
    """Host events of some threads, sorted by (track, start, longest first), nested."""

    row: np.ndarray  # row in the part's store
    track: np.ndarray
    name: np.ndarray
    start: np.ndarray
    dur: np.ndarray
    parent: np.ndarray  # index of the enclosing event, -1 at a thread's top
    self_ns: np.ndarray  # the event model's (``traces.nesting.self_times``)
    is_step: np.ndarray  # a training step (ProfilerStep#n, a step annotation): the store's

    def __len__(self) -> int:
        return len(self.row)


@dataclass(frozen=True)
class Tree:
    """Frames in creation order (a parent before its children); frame 0 is not a root: roots
    have parent -1. ``name`` holds store string ids, or ``OTHER``."""

    parent: np.ndarray
    name: np.ndarray
    total_ns: np.ndarray
    self_ns: np.ndarray
    count: np.ndarray

    def __len__(self) -> int:
        return len(self.parent)


def read_host_events(store: str | Path, tracks: list[int], complete_steps: bool = False) -> Events:
    """The host events (a thread's stack: ``tracefmt.kinds.HOST_KINDS``) that Kineto recorded
    (a collector part's captured steps; an imported trace whole) of ``tracks`` in a part's
    store, only those in its complete steps when ``complete_steps``, with the event model's
    nesting and self times. A collector's step annotations outside its captures hold no
    operators: in a tree they would count their whole time as their own."""
    reader = TimelineReader(store)
    info = reader.tracks.set_index("track")
    pieces = []
    for track in sorted(set(tracks)):
        if track not in info.index:
            continue
        first, n = int(info.at[track, "first_row"]), int(info.at[track, "n_rows"])
        table = reader.rows(first, first + n, _COLUMNS)
        table = table.append_column("row", pa.array(np.arange(first, first + n, dtype=np.int64)))
        keep = pc.is_in(table.column("kind"), value_set=pa.array(HOST_KINDS, pa.uint8()))
        keep = pc.and_(keep, table.column("captured"))
        if complete_steps:
            keep = pc.and_(keep, table.column("in_complete_steps"))
        pieces.append(table.filter(keep))
    if not pieces:
        empty = np.empty(0, np.int64)
        return Events(empty, empty, empty, empty, empty, empty, empty, np.empty(0, bool))
    c = {
        name: column.to_numpy()
        for name, column in zip(
            pieces[0].column_names, pa.concat_tables(pieces).columns, strict=True
        )
    }
    # Store rows are in (track, start) order; the parent's row becomes its index here. A
    # parent outside the selection (not a host event) leaves the event at its thread's top.
    at = np.minimum(np.searchsorted(c["row"], c["parent"]), len(c["row"]) - 1)
    parent = np.where((c["parent"] >= 0) & (c["row"][at] == c["parent"]), at, -1)
    return Events(
        c["row"],
        c["track"].astype(np.int64),
        c["name"].astype(np.int64),
        c["start_ns"],
        c["dur_ns"],
        parent,
        c["self_ns"],
        c["is_step"].astype(bool),
    )


def steps_as_one(events: Events, strings: Sequence[str]) -> tuple[Events, list[str]]:
    """Every training step as one frame ("step_57", "step_58", … → "step_*":
    ``tracefmt.names.steps_as_one``), so the tree sums what the steps did rather than listing
    each step apart; the timeline shows them one by one."""
    name, names = names_steps_as_one(events.name, events.is_step, strings)
    return replace(events, name=name), names


def step_thread(events: Events) -> int | None:
    """The thread that ran the training steps: the one holding the most step events; None
    when no thread holds one. Its tree is the training loop, where idle feeder threads
    (DataLoader workers' pin-memory threads) would otherwise fill most of an all-threads tree."""
    tracks = events.track[events.is_step]
    if not len(tracks):
        return None
    found, counts = np.unique(tracks, return_counts=True)
    return int(found[np.argmax(counts)])


def _chains(parent: np.ndarray, first: np.ndarray):
    """For each of ``first``, its chain going up: yields (which of ``first`` are still going,
    the item reached at that level)."""
    idx = np.arange(len(first))
    at = first
    while len(at):
        yield idx, at
        up = parent[at]
        keep = up >= 0
        idx, at = idx[keep], up[keep]


def _depth_order(parent: np.ndarray) -> list[np.ndarray]:
    """Indexes level by level from the top (each level's parents in the one before)."""
    levels, level = [], np.flatnonzero(parent < 0)
    children_of = np.argsort(parent, kind="stable")
    sorted_parent = parent[children_of]
    while len(level):
        levels.append(level)
        lo = np.searchsorted(sorted_parent, level, side="left")
        hi = np.searchsorted(sorted_parent, level, side="right")
        counts = hi - lo
        take = np.repeat(lo - np.cumsum(np.r_[0, counts[:-1]]), counts) + np.arange(counts.sum())
        level = children_of[take]
    return levels


def top_down(events: Events) -> tuple[Tree, np.ndarray]:
    """The tree of frames from the threads' tops down, and each event's frame."""
    parent, name, frame = _by_path(events.parent, events.name)
    return _tree(parent, name, frame, events.dur, events.self_ns), frame


def merge(trees: list[Tree]) -> Tree:
    """One top-down tree of several (a rank's parts: a collector job's chunks), frames with
    the same path of names as one: their times and counts summed. Names must share one table."""
    if len(trees) == 1:
        return trees[0]
    offsets = np.cumsum([0] + [len(t) for t in trees[:-1]])
    parent, name, into = _by_path(
        np.concatenate(
            [np.where(t.parent >= 0, t.parent + o, -1) for t, o in zip(trees, offsets, strict=True)]
        ),
        np.concatenate([t.name for t in trees]),
    )

    def summed(values: list[np.ndarray]) -> np.ndarray:
        weights = np.concatenate(values)
        return np.bincount(into, weights=weights, minlength=len(parent)).astype(np.int64)

    return Tree(
        parent,
        name,
        summed([t.total_ns for t in trees]),
        summed([t.self_ns for t in trees]),
        summed([t.count for t in trees]),
    )


def _by_path(parent: np.ndarray, name: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Items (events, or frames of several trees) nested by ``parent``, as frames keyed by
    their path of names: each frame's parent frame and name, in creation order (a parent
    before its children), and each item's frame."""
    frame = np.full(len(parent), -1, dtype=np.int64)
    parents, names = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
    n_frames = 0
    for level in _depth_order(parent):
        up = parent[level]
        up_frame = np.where(up >= 0, frame[np.maximum(up, 0)], -1)
        up_frame, level_names, inverse = _frames_of(up_frame, name[level])
        frame[level] = n_frames + inverse
        parents.append(up_frame)
        names.append(level_names)
        n_frames += len(level_names)
    return np.concatenate(parents), np.concatenate(names), frame


def _frames_of(up_frame: np.ndarray, name: np.ndarray):
    """The distinct (parent frame, name) pairs of one level, and each event's pair."""
    width = int(name.max()) + 2
    keys, inverse = np.unique((up_frame + 1) * width + (name + 1), return_inverse=True)
    return keys // width - 1, keys % width - 1, inverse.ravel()


def bottom_up(tree: Tree) -> Tree:
    """From a top-down tree: each frame's self time at the top, split under it by the chain
    of its callers (a path repeated every step is walked once, not once per event)."""
    spent = np.flatnonzero(tree.self_ns > 0)
    frame_of = np.full(len(spent), -1, dtype=np.int64)
    parents, names, frames, items = [], [], [], []
    n_frames = 0
    for idx, at in _chains(tree.parent, spent):
        up_frame, name, inverse = _frames_of(frame_of[idx], tree.name[at])
        frame_of[idx] = n_frames + inverse
        parents.append(up_frame)
        names.append(name)
        frames.append(frame_of[idx])
        items.append(spent[idx])
        n_frames += len(name)
    if not parents:
        empty = np.empty(0, np.int64)
        return Tree(empty, empty, empty, empty, empty)
    parent, name = np.concatenate(parents), np.concatenate(names)
    frame, item = np.concatenate(frames), np.concatenate(items)
    total = np.bincount(frame, weights=tree.self_ns[item], minlength=n_frames).astype(np.int64)
    count = np.bincount(frame, weights=tree.count[item], minlength=n_frames).astype(np.int64)
    return Tree(parent, name, total, _self_of(parent, total), count)


def _tree(parent, name, frame, dur, self_ns) -> Tree:
    n = len(parent)
    return Tree(
        parent,
        name,
        np.bincount(frame, weights=dur, minlength=n).astype(np.int64),
        np.bincount(frame, weights=self_ns, minlength=n).astype(np.int64),
        np.bincount(frame, minlength=n).astype(np.int64),
    )


def _self_of(parent: np.ndarray, total: np.ndarray) -> np.ndarray:
    has = parent >= 0
    children = np.bincount(parent[has], weights=total[has], minlength=len(parent))
    return np.maximum(total - children.astype(np.int64), 0)


def prune(tree: Tree, min_ns: int, max_frames: int) -> Tree:
    """Frames under ``min_ns`` (and past the ``max_frames`` largest) merged, per parent, into
    one "(other)" frame; a frame whose parent goes goes too."""
    if not len(tree):
        return tree
    keep = tree.total_ns >= max(min_ns, 1)
    if keep.sum() > max_frames:
        cut = np.sort(tree.total_ns)[::-1][max_frames - 1]
        keep &= tree.total_ns > cut
    child = tree.parent >= 0
    while True:  # one pass per level at most
        inherited = keep.copy()
        inherited[child] &= keep[tree.parent[child]]
        if (inherited == keep).all():
            break
        keep = inherited
    # Dropped frames whose parent is kept make their parent's "(other)".
    edge = ~keep & ((tree.parent < 0) | keep[np.maximum(tree.parent, 0)])
    new_id = np.cumsum(keep) - 1
    kept = np.flatnonzero(keep)
    parent = np.where(tree.parent[kept] >= 0, new_id[np.maximum(tree.parent[kept], 0)], -1)
    owners, inverse = np.unique(
        np.where(tree.parent[edge] >= 0, new_id[np.maximum(tree.parent[edge], 0)], -1),
        return_inverse=True,
    )
    other_total = np.bincount(inverse, weights=tree.total_ns[edge]).astype(np.int64)
    other_count = np.bincount(inverse, weights=tree.count[edge]).astype(np.int64)
    return Tree(
        np.r_[parent, owners],
        np.r_[tree.name[kept], np.full(len(owners), OTHER)],
        np.r_[tree.total_ns[kept], other_total],
        np.r_[tree.self_ns[kept], other_total],
        np.r_[tree.count[kept], other_count],
    )


def occurrences(events: Events, path: list[int], inverted: bool) -> np.ndarray:
    """Indexes of the events at frame ``path`` (name ids, from the top of the tree), in time
    order. Top-down the path runs from a thread's top to the event; bottom-up from the event
    (which spent self time) up through its callers."""
    if not path or not len(events):
        return np.empty(0, np.int64)
    leaf = path[0] if inverted else path[-1]
    callers = path[1:] if inverted else path[-2::-1]
    found = np.flatnonzero(events.name == leaf)
    if inverted:
        found = found[events.self_ns[found] > 0]
    at = found
    for name in callers:
        up = events.parent[at]
        ok = up >= 0
        ok[ok] = events.name[up[ok]] == name
        found, at = found[ok], up[ok]
    if not inverted:
        found = found[events.parent[at] < 0]
    return found[np.argsort(events.start[found], kind="stable")]
