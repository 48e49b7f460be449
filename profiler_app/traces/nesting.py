"""How events nest on a thread (or a timeline lane), and an event's self time: the one
definition the store's event model (``traces.event_model``), the timeline's rows, the call
tree, the operator table, the framework metrics and range totals all read.

Nesting is found without a per-event loop: with every start and end as a point on the group's
time line (ends before starts at equal times; a zero-length event is a point that holds
nothing), the running count of open events at an event's start is its depth, and its parent is
the last event that started before it one level up (among equal starts, the longer is outer).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

_MAX_KEY = 2**62


def nest(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(parent, depth) of each interval (any order): its innermost enclosing interval in the
    same group (an index into the inputs; -1 at the top) and how many intervals enclose it."""
    n = len(start)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    code = pd.factorize(group, sort=True)[0].astype(np.int64)
    span = 4 * (int(np.max(np.maximum(start, end))) - int(start.min())) + 2
    n_groups = int(code.max()) + 1
    if n_groups * span < _MAX_KEY or n_groups == 1:
        return _nest_keys(code, start, end)
    # Too many groups for one integer key over this span: nest halves of the groups apart.
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    for low in (code < n_groups // 2, code >= n_groups // 2):
        rows = np.flatnonzero(low)
        p, d = nest(code[rows], start[rows], end[rows])
        parent[rows] = np.where(p >= 0, rows[np.maximum(p, 0)], -1)
        depth[rows] = d
    return parent, depth


def _nest_keys(
    code: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    # Working arrays are dropped as soon as they are used: on an 18-million-event thread each
    # one is 144 MB.
    n = len(start)
    # Times in quarter-ns from the first start: an end at t (4t) sorts before a start at t
    # (4t + 1); a zero-length interval is a point that holds nothing (end key = start key).
    origin = start.min()
    start4 = 4 * (start - origin) + 1
    point = end <= start
    end4 = np.where(point, start4, 4 * (end - origin))
    span = int(max(start4.max(), end4.max())) + 1
    if (int(code.max()) + 1) * span >= _MAX_KEY:
        raise ValueError("a group spans too long a time to nest its events")
    group_key = code * span
    key_start, key_end = start4, end4  # in place: neither is needed apart from its key
    key_start += group_key
    key_end += group_key
    del start4, end4
    # Start order (pos): group, start, and the longer first among equal starts (the outer).
    by_start = np.argsort(key_start, kind="stable")
    sorted_starts = key_start[by_start]
    tie = np.flatnonzero(sorted_starts[1:] == sorted_starts[:-1])
    if len(tie):
        members = np.union1d(tie, tie + 1)
        rows = by_start[members]
        by_start[members] = rows[np.lexsort((start[rows] - end[rows], sorted_starts[members]))]
    del tie
    pos = np.empty(n, dtype=np.int64)
    pos[by_start] = np.arange(n)
    # Open at an interval's start: those of its group that started before it, minus those
    # that had ended, minus the points at the same instant that came before it (a point is
    # over as soon as it happens).
    key_end.sort()
    sorted_ends = key_end
    depth = pos - np.searchsorted(sorted_starts, group_key)
    depth -= np.searchsorted(sorted_ends, key_start)
    depth += np.searchsorted(sorted_ends, group_key)
    del sorted_ends, key_end, key_start, group_key
    points = np.flatnonzero(point[by_start])  # their positions, ascending
    if len(points):
        earlier_points = np.zeros(n, dtype=np.int64)
        earlier_points[by_start[points]] = np.arange(len(points)) - np.searchsorted(
            sorted_starts[points], sorted_starts[points]
        )
        depth -= earlier_points
        del earlier_points
    del points, sorted_starts, point
    np.maximum(depth, 0, out=depth)
    # The parent is the last interval before it (in start order) one level up.
    depth_by_pos = depth[by_start]
    at = np.argsort(depth_by_pos, kind="stable")
    sorted_keys = depth_by_pos[at]
    del depth_by_pos
    sorted_keys *= n
    sorted_keys += at
    del at
    wanted = depth - 1
    wanted *= n
    wanted += pos
    del pos
    candidate = np.searchsorted(sorted_keys, wanted) - 1
    del wanted
    parent_key = sorted_keys[np.maximum(candidate, 0)]
    del sorted_keys
    found = (depth > 0) & (candidate >= 0) & (parent_key // n == depth - 1)
    del candidate
    parent_key %= n
    parent = np.where(found, by_start[parent_key], -1)
    del parent_key, by_start
    found &= code[np.maximum(parent, 0)] == code
    return np.where(found, parent, -1), depth


def self_times(start: np.ndarray, end: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Each event's self time: its duration less the part of it that its direct children
    cover (a child running past its parent's end counts up to that end), never below 0."""
    child = np.flatnonzero(parent >= 0)
    up = parent[child]
    inside = np.clip(np.minimum(end[child], end[up]) - np.maximum(start[child], start[up]), 0, None)
    covered = np.bincount(up, weights=inside, minlength=len(start)).astype(np.int64)
    return np.maximum(end - start - covered, 0)


def nearest(marked: np.ndarray, parent: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """For each event, the closest of itself and its ancestors that is ``marked`` (-1: none),
    one nesting level at a time from the top."""
    owner = np.where(marked, np.arange(len(marked)), -1)
    at = np.flatnonzero(~marked & (parent >= 0) & (depth > 0))
    # The unmarked events with a parent, by level (one pass over all events, not one a level).
    level = depth[at]
    if len(at) and level.max() <= np.iinfo(np.int16).max:
        level = level.astype(np.int16)  # a stable sort of 16-bit integers is a radix sort
    order = np.argsort(level, kind="stable")
    at, level = at[order], level[order]
    for rows in np.split(at, np.flatnonzero(level[1:] != level[:-1]) + 1):
        owner[rows] = owner[parent[rows]]
    return owner


def subtree_sums(values: np.ndarray, parent: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """values[e] plus the values of all of e's descendants, one depth level at a time."""
    total = values.astype(np.float64)
    for level in range(int(depth.max(initial=0)), 0, -1):
        at = np.flatnonzero((depth == level) & (parent >= 0))
        total += np.bincount(parent[at], weights=total[at], minlength=len(total))
    return total
