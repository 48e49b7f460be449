"""Where a step's time goes: each nanosecond of the steps counted once, in the first part of
``PARTS`` that is happening then (as TensorBoard's profiler overview splits a step into kernel,
memcpy, memset, runtime, data loader, CPU and other time), so the parts add up to the steps.

- ``kernels``: a GPU kernel runs (any stream);
- ``copies`` / ``sets``: no kernel, a memory copy / memory set runs;
- ``sync_waits``: no GPU operation, a stream or device synchronisation is in progress;
- ``data_loading``: none of those, a host event of the data loader runs
  (``DATA_LOADING_PATTERN``, the framework breakdown's rule);
- ``host_only``: none of those, a host operator or CUDA runtime/driver call runs, the GPU idle;
- ``idle``: the rest: neither the GPU nor a recorded host call is busy (Python between calls,
  waits the profiler does not see).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from profiler_app.traces.arrays import unique_sorted
from profiler_app.traces.timeline_read import TimelineReader
from profiler_app.traces.utilization import merge_intervals
from profiler_app.traces.window import IN_BOTH, IN_COMPLETE_STEPS, IN_WHOLE_TRACE
from tracefmt.kinds import LAUNCH_KINDS, EventKind

PARTS = ("kernels", "copies", "sets", "sync_waits", "data_loading", "host_only", "idle")
# The same names the framework breakdown counts as data loading
# (``analysis.framework``): "enumerate(DataLoader)#…__next__" among them.
DATA_LOADING_PATTERN = re.compile(r"dataloader|data_load|dataset|enumerate\(", re.IGNORECASE)
SYNC_CALL_PATTERN = re.compile(r"synchronize", re.IGNORECASE)
HOST_CALL_KINDS = (int(EventKind.CPU_OP), *LAUNCH_KINDS)
DATA_LOADING_KINDS = (
    int(EventKind.CPU_OP),
    int(EventKind.USER_ANNOTATION),
    int(EventKind.PYTHON_FUNCTION),
)
Intervals = tuple[np.ndarray, np.ndarray]


def name_flags(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per string of the part: whether it names data loading, and a synchronisation call."""
    loads = np.array([bool(DATA_LOADING_PATTERN.search(s)) for s in strings], dtype=bool)
    syncs = np.array([bool(SYNC_CALL_PATTERN.search(s)) for s in strings], dtype=bool)
    return loads, syncs


def event_intervals(
    kind: np.ndarray,
    name: np.ndarray,
    start_ns: np.ndarray,
    dur_ns: np.ndarray,
    flags: tuple[np.ndarray, np.ndarray],
) -> dict[str, Intervals]:
    """The [start, end) intervals of the events that make each part but ``idle``; ``name``
    holds indices into the strings ``flags`` (``name_flags``) were found from."""
    loads, syncs = flags
    names = name.astype(np.int64)
    is_sync = (kind == int(EventKind.CUDA_SYNC)) | (
        (kind == int(EventKind.CUDA_RUNTIME)) & syncs[names]
    )
    chosen = {
        "kernels": kind == int(EventKind.KERNEL),
        "copies": kind == int(EventKind.GPU_MEMCPY),
        "sets": kind == int(EventKind.GPU_MEMSET),
        "sync_waits": is_sync,
        "data_loading": np.isin(kind, DATA_LOADING_KINDS) & loads[names],
        "host_only": np.isin(kind, HOST_CALL_KINDS),
    }
    end_ns = start_ns + dur_ns
    return {part: (start_ns[rows], end_ns[rows]) for part, rows in chosen.items()}


def step_breakdown(steps: Intervals, events: Mapping[str, Intervals]) -> dict[str, int]:
    """Nanoseconds of each of ``PARTS`` in the ``steps`` ([start, end) arrays, not
    overlapping), from ``events`` (``event_intervals``): they sum to the steps' time."""
    merged = {part: merge_intervals(*events[part]) for part in PARTS[:-1]}
    points = unique_sorted(np.concatenate([*steps, *(a for pair in merged.values() for a in pair)]))
    if len(points) < 2:
        return dict.fromkeys(PARTS, 0)
    left, lengths = points[:-1], np.diff(points)
    part_of = np.full(len(left), len(PARTS), dtype=np.int64)  # outside every step
    in_step = _covers(steps, left)
    part_of[in_step] = len(PARTS) - 1  # idle unless a part claims it
    for index in reversed(range(len(PARTS) - 1)):  # the first part in PARTS wins
        part_of[in_step & _covers(merged[PARTS[index]], left)] = index
    totals = np.bincount(part_of, weights=lengths, minlength=len(PARTS) + 1)
    return {part: int(totals[i]) for i, part in enumerate(PARTS)}


def _covers(intervals: Intervals, points: np.ndarray) -> np.ndarray:
    """Whether each point lies in one of the sorted, disjoint ``intervals``."""
    starts, ends = intervals
    if len(starts) == 0:
        return np.zeros(len(points), dtype=bool)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    at = np.searchsorted(starts, points, side="right") - 1
    return (at >= 0) & (points < ends[np.maximum(at, 0)])


def store_breakdown(
    store_dir: str | Path, steps: pd.DataFrame, last_step_start_ns: int | None
) -> dict[int, dict[str, int]]:
    """``step_breakdown`` of one part's captured ``steps`` (``start_ns``, ``dur_ns``,
    ``captured``) from the captured events of its timeline store, step annotations left out, in
    each window, keyed by the ``windows`` bits its rows get (``traces.window``): one entry for
    both windows when the part has no cut (``last_step_start_ns`` None). Per part: a step's
    events are in the part that holds the step (a collector capture is whole steps)."""
    captured = steps[steps["captured"].to_numpy(dtype=bool)]
    bounds = _intervals(captured)
    if not len(bounds[0]):
        return {IN_BOTH: dict.fromkeys(PARTS, 0)}
    reader = TimelineReader(store_dir)
    flags = name_flags(reader.strings)
    steps_end_ns = int(bounds[1].max())
    merged: dict[str, list[Intervals]] = {part: [] for part in PARTS[:-1]}
    # A row group at a time, each part's intervals merged as they come (a union of merged
    # intervals merges to the union's): the part's columns are never held whole, which made
    # this the parse's highest step (a 2.8M-event part's breakdown peaks 85 MB lower).
    for group in reader.groups(["kind", "name", "start_ns", "dur_ns", "captured", "is_step"]):
        keep = group["captured"] & ~group["is_step"] & (group["start_ns"] < steps_end_ns)
        kind, name, start_ns, dur_ns = (
            group[c][keep] for c in ("kind", "name", "start_ns", "dur_ns")
        )
        for part, intervals in event_intervals(kind, name, start_ns, dur_ns, flags).items():
            merged[part].append(merge_intervals(*intervals))
    events = {part: merge_intervals(*_joined(pieces)) for part, pieces in merged.items()}
    whole = step_breakdown(bounds, events)
    if last_step_start_ns is None:
        return {IN_BOTH: whole}
    kept = _intervals(captured[captured["start_ns"].to_numpy() < last_step_start_ns])
    return {IN_WHOLE_TRACE: whole, IN_COMPLETE_STEPS: step_breakdown(kept, events)}


def _joined(pieces: list[Intervals]) -> Intervals:
    empty = np.empty(0, np.int64)
    return (
        np.concatenate([empty, *(starts for starts, _ in pieces)]),
        np.concatenate([empty, *(ends for _, ends in pieces)]),
    )


def _intervals(steps: pd.DataFrame) -> Intervals:
    starts = steps["start_ns"].to_numpy(np.int64)
    order = np.argsort(starts, kind="stable")
    return starts[order], starts[order] + steps["dur_ns"].to_numpy(np.int64)[order]
