"""The operator table, like ``torch.profiler``'s ``key_averages()``.

Host events of a thread nest (an operator calls operators, an annotation holds operators, an
operator calls the CUDA runtime). An event's self time is its duration minus its direct
children's durations; CPU memory allocated (Kineto's "[memory]" events, with
``profile_memory=True``) is charged to the innermost event running at that instant, and its
total includes its children's.

Nesting is found without a per-event loop: with every start and end as a point on the
thread's time line (ends before starts at equal times; a zero-length event ends right after
it starts), the running count of open events at an event's start is its depth, and its
parent is the last event that started before it one level up.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from profiler_app.insights.analyses.events import RankTrace
from tracefmt.kinds import EventKind

HOST_KINDS = (
    int(EventKind.CPU_OP),
    int(EventKind.USER_ANNOTATION),
    int(EventKind.CUDA_RUNTIME),
    int(EventKind.CUDA_DRIVER),
    int(EventKind.STEP),
)
MEMORY_EVENT = "[memory]"


def nesting(track: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(parent, depth): each interval's innermost enclosing interval on the same track (-1 if
    none) and how many intervals enclose it."""
    n = len(start)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    # Times in quarter-ns from the first start: an end at t (4t) sorts before a start at t
    # (4t + 1); a zero-length interval is a point that holds nothing (end key = start key).
    # One int64 key per point: track * span + time.
    code = pd.factorize(track, sort=True)[0].astype(np.int64)
    origin = start.min()
    start4 = 4 * (start - origin) + 1
    point = end == start
    end4 = np.where(point, start4, 4 * (end - origin))
    span = int(max(start4.max(), end4.max())) + 1
    if (int(code.max()) + 1) * span >= 2**62:
        raise ValueError("the trace spans too long a time to nest its events")
    key_start = code * span + start4
    key_end = code * span + end4
    # Start order (pos): track, start, and the longer first among equal starts (the outer).
    by_start = np.argsort(key_start, kind="stable")
    sorted_starts = key_start[by_start]
    tie = np.flatnonzero(sorted_starts[1:] == sorted_starts[:-1])
    if len(tie):
        members = np.union1d(tie, tie + 1)
        rows = by_start[members]
        by_start[members] = rows[np.lexsort((start[rows] - end[rows], sorted_starts[members]))]
    pos = np.empty(n, dtype=np.int64)
    pos[by_start] = np.arange(n)
    # Open at an interval's start: those of its track that started before it, minus those
    # that had ended, minus the points at the same instant that came before it (a point is
    # over as soon as it happens).
    track_first = np.searchsorted(sorted_starts, code * span)
    sorted_ends = np.sort(key_end)
    ended = np.searchsorted(sorted_ends, key_start) - np.searchsorted(sorted_ends, code * span)
    points = np.flatnonzero(point[by_start])  # their positions, ascending
    earlier_points = np.zeros(n, dtype=np.int64)
    earlier_points[by_start[points]] = np.arange(len(points)) - np.searchsorted(
        sorted_starts[points], sorted_starts[points]
    )
    depth = pos - track_first - ended - earlier_points
    # The parent is the last interval before it (in start order) one level up.
    depth_by_pos = depth[by_start]
    at = np.argsort(depth_by_pos, kind="stable")
    sorted_keys = depth_by_pos[at] * n + at
    candidate = np.searchsorted(sorted_keys, (depth - 1) * n + pos) - 1
    parent_key = sorted_keys[np.maximum(candidate, 0)]
    found = (depth > 0) & (candidate >= 0) & (parent_key // n == depth - 1)
    return np.where(found, by_start[parent_key % n], -1), depth


def _subtree_sums(values: np.ndarray, parent: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """values[e] plus the values of all of e's descendants, one depth level at a time."""
    total = values.astype(np.float64)
    for level in range(int(depth.max(initial=0)), 0, -1):
        at = np.flatnonzero((depth == level) & (parent >= 0))
        total += np.bincount(parent[at], weights=total[at], minlength=len(total))
    return total


def operator_table(traces: Iterable[RankTrace], group_by_input_shape: bool = False) -> pd.DataFrame:
    """Per rank and operator name (and input shapes): calls, total and self CPU time, and CPU
    memory when the trace recorded allocations.

    Columns: rank, name, [input_dims,] count, total_ns, self_ns, avg_total_ns, avg_self_ns,
    self_pct, total_pct (of the rank's self time), and cpu_memory_bytes /
    self_cpu_memory_bytes when present.
    """
    by_shape = operator_table_by_shape(traces)
    return by_shape if group_by_input_shape else merge_input_shapes(by_shape)


def operator_table_by_shape(traces: Iterable[RankTrace]) -> pd.DataFrame:
    """The operator table with one row per rank, name and input shapes ("" when the trace
    recorded none)."""
    frames = [_operator_rows(trace) for trace in traces]
    if not frames:
        return pd.DataFrame(columns=["rank", "name", "input_dims", "count", "total_ns", "self_ns"])
    return _with_shares(pd.concat(frames, ignore_index=True))


def merge_input_shapes(by_shape: pd.DataFrame) -> pd.DataFrame:
    """The by-shape table summed over input shapes: one row per rank and name."""
    sums = [c for c in by_shape.columns if c in ADDITIVE]
    merged = by_shape.groupby(["rank", "name"], sort=False)[sums].sum(min_count=1).reset_index()
    return _with_shares(merged)


# The columns that add up over calls; the rest are derived from them.
ADDITIVE = ("count", "total_ns", "self_ns", "cpu_memory_bytes", "self_cpu_memory_bytes")


def _with_shares(table: pd.DataFrame) -> pd.DataFrame:
    """Averages per call and shares of each rank's self time, sorted by rank then self time."""
    table = table.copy()
    table["avg_total_ns"] = table["total_ns"] / table["count"]
    table["avg_self_ns"] = table["self_ns"] / table["count"]
    self_total = table.groupby("rank")["self_ns"].transform("sum").to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        table["self_pct"] = np.where(self_total > 0, 100.0 * table["self_ns"] / self_total, 0.0)
        table["total_pct"] = np.where(self_total > 0, 100.0 * table["total_ns"] / self_total, 0.0)
    return table.sort_values(["rank", "self_ns"], ascending=[True, False], ignore_index=True)


def _operator_rows(trace: RankTrace) -> pd.DataFrame:
    events = trace.events
    kind = events["kind"].to_numpy()
    name = events["name"].to_numpy()
    is_op = np.isin(kind, HOST_KINDS)
    is_memory = (
        (kind == EventKind.INSTANT)
        & (name == _string_id(trace, MEMORY_EVENT))
        & (events["bytes"].to_numpy() != -1)
        & (events["device"].to_numpy() < 0)
    )
    # Operators first, then the memory events (as points), in one nesting.
    rows = np.concatenate((np.flatnonzero(is_op), np.flatnonzero(is_memory)))
    n_ops = int(is_op.sum())
    start = events["start_ns"].to_numpy()[rows]
    dur = np.where(np.arange(len(rows)) < n_ops, events["dur_ns"].to_numpy()[rows], 0)
    parent, depth = nesting(events["track"].to_numpy()[rows].astype(np.int64), start, start + dur)
    has_parent = parent >= 0
    children = np.bincount(parent[has_parent], weights=dur[has_parent], minlength=len(dur))
    keys = ["name", "input_dims"]
    columns = {
        "name": name[rows[:n_ops]],
        "input_dims": events["input_dims"].to_numpy()[rows[:n_ops]],
        "total_ns": dur[:n_ops],
        "self_ns": (dur - children)[:n_ops],
    }
    if len(rows) > n_ops:
        allocated = np.where(
            np.arange(len(rows)) < n_ops, 0.0, events["bytes"].to_numpy()[rows].astype(np.float64)
        )
        charged = has_parent & (np.arange(len(dur)) >= n_ops)
        own = np.bincount(parent[charged], weights=allocated[charged], minlength=len(dur))
        columns["self_cpu_memory_bytes"] = own[:n_ops]
        columns["cpu_memory_bytes"] = _subtree_sums(own, parent, depth)[:n_ops]
    per_event = pd.DataFrame(columns)
    table = per_event.groupby(keys, sort=False).agg(
        count=("total_ns", "size"),
        **{c: (c, "sum") for c in columns if c not in keys},
    )
    table = table.reset_index()
    table["name"] = trace.names[table["name"].to_numpy()]
    dims = table["input_dims"].to_numpy()
    table["input_dims"] = np.where(dims >= 0, trace.names[np.maximum(dims, 0)], "")
    table.insert(0, "rank", trace.rank)
    return table


def _string_id(trace: RankTrace, text: str) -> int:
    matches = np.flatnonzero(trace.names == text)
    return int(matches[0]) if len(matches) else -2
