"""The facts every view needs about an event, computed once when a part's store is written.

Beside the columns every input format fills (``tracefmt.columns``), each event of a store's
``events.parquet`` gets:

- ``depth`` and ``parent``: how the event nests among the events of its track (a CPU thread
  or a GPU stream), by ``traces.nesting.nest``; ``parent`` is a row of the store, -1 at the top;
- ``self_ns``: the duration less what its direct children cover (``traces.nesting.self_times``).
  Everything recorded on the thread nests, so the CUDA runtime calls an operator makes are its
  children and are not in its self time (as ``torch.profiler``'s ``key_averages`` counts);
- ``step``: the number of the training step the event belongs to, -1 for none. A step is a
  host annotation ``tracefmt.names.step_number`` accepts (or a STEP event); host events belong
  to the step they start in, GPU work to the step of the call that launched it;
- ``captured``: 1 when the event lies in a time range Kineto recorded. An imported trace is
  captured whole; a collector part only in its Kineto windows (``captured_windows_ns``), the
  rest of its steps being annotations and samples only. GPU work counts by its launch.

The analyses, the call tree, range totals and the SQL views read these columns; nothing
re-derives them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from profiler_app.traces.nesting import nest, self_times
from tracefmt.kinds import DEVICE_KINDS, GPU_OP_KINDS, EventKind
from tracefmt.names import step_number

MODEL_SCHEMA = pa.schema(
    [
        ("depth", pa.int32()),
        ("parent", pa.int64()),
        ("self_ns", pa.int64()),
        ("step", pa.int32()),
        ("is_step", pa.bool_()),
        ("captured", pa.bool_()),
    ]
)
MODEL_COLUMNS = tuple(MODEL_SCHEMA.names)
# What the model is computed from.
MODEL_INPUT_COLUMNS = ("track", "kind", "name", "start_ns", "dur_ns", "correlation")
# Host-side kinds a step annotation may have (GPU projections of it are not steps).
_STEP_KINDS = (int(EventKind.USER_ANNOTATION), int(EventKind.STEP))
_BATCH_ROWS = 1 << 21
Windows = Sequence[Sequence[int]] | None


def step_ids(strings: Sequence[str]) -> np.ndarray:
    """The number of the step each string names (-1: not a step name)."""
    numbers = [step_number(s) for s in strings]
    return np.array([-1 if n is None else n for n in numbers], dtype=np.int64)


def build_event_model(
    columns: dict[str, np.ndarray],
    strings: Sequence[str],
    captured_windows_ns: Windows = None,
) -> dict[str, np.ndarray]:
    """The model columns of a part's events (``MODEL_INPUT_COLUMNS``, in store order). The
    captured windows: the ranges a collector part's Kineto recorded; None for a part recorded
    whole."""
    track, kind, name = columns["track"], columns["kind"], columns["name"]
    start, dur, correlation = columns["start_ns"], columns["dur_ns"], columns["correlation"]
    end = start + dur
    parent, depth = _nest_by_tracks(track, start, end)
    numbers = np.r_[step_ids(strings), -1]  # id -1 (no name) reads the last entry
    named_step = numbers[np.where((name >= 0) & (name < len(strings)), name, len(strings))]
    is_step = (np.isin(kind, _STEP_KINDS) & (named_step >= 0)) | (kind == EventKind.STEP)
    at_ns = launch_times(kind, start, correlation)
    step = _step_of(at_ns, start[is_step], end[is_step], named_step[is_step])
    step[is_step] = named_step[is_step]
    if captured_windows_ns is None:
        captured = np.ones(len(kind), dtype=bool)
    else:
        # A step counts by its middle: the collector's step begins a moment before Kineto's.
        at_ns = np.where(is_step, start + dur // 2, at_ns)
        captured = _in_windows(at_ns, captured_windows_ns)
    return {
        "depth": depth.astype(np.int32),
        "parent": parent,
        "self_ns": self_times(start, end, parent),
        "step": step.astype(np.int32),
        "is_step": is_step,
        "captured": captured,
    }


def has_event_model(events: pq.ParquetFile) -> bool:
    return all(name in events.schema_arrow.names for name in MODEL_COLUMNS)


def _nest_by_tracks(
    track: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``nest`` over runs of whole tracks (the store is sorted by track) of about
    ``_BATCH_ROWS`` events each, so its working arrays stay a bounded size."""
    n = len(track)
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    if not n:
        return parent, depth
    track_first = np.flatnonzero(np.r_[True, track[1:] != track[:-1]])
    cuts = np.unique(
        track_first[np.searchsorted(track_first, np.arange(0, n, _BATCH_ROWS), "right") - 1]
    )
    for a, b in zip(cuts, np.r_[cuts[1:], n], strict=True):
        p, d = nest(track[a:b], start[a:b], end[a:b])
        parent[a:b] = np.where(p >= 0, p + a, -1)
        depth[a:b] = d
    return parent, depth


def launch_times(kind: np.ndarray, start: np.ndarray, correlation: np.ndarray) -> np.ndarray:
    """When each event happened for the host: its start, or for GPU work the start of the
    call that launched it (same correlation id) when the trace holds that call."""
    at = start.copy()
    gpu = np.flatnonzero(np.isin(kind, GPU_OP_KINDS) & (correlation >= 0))
    host = np.flatnonzero(~np.isin(kind, list(DEVICE_KINDS)) & (correlation >= 0))
    if not len(gpu) or not len(host):
        return at
    host = host[np.argsort(correlation[host], kind="stable")]
    found = np.minimum(np.searchsorted(correlation[host], correlation[gpu]), len(host) - 1)
    ok = correlation[host][found] == correlation[gpu]
    at[gpu[ok]] = start[host[found[ok]]]
    return at


def _step_of(
    at_ns: np.ndarray, step_start: np.ndarray, step_end: np.ndarray, number: np.ndarray
) -> np.ndarray:
    """The number of the step whose [start, end) holds each time (-1: none)."""
    if not len(step_start):
        return np.full(len(at_ns), -1, dtype=np.int64)
    order = np.argsort(step_start, kind="stable")
    step_start, step_end, number = step_start[order], step_end[order], number[order]
    at = np.searchsorted(step_start, at_ns, side="right") - 1
    inside = (at >= 0) & (at_ns < step_end[np.maximum(at, 0)])
    return np.where(inside, number[np.maximum(at, 0)], -1)


def _in_windows(at_ns: np.ndarray, windows: Sequence[Sequence[int]]) -> np.ndarray:
    """Which times lie in one of the (sorted, disjoint) [start, end) windows."""
    if not len(windows):
        return np.zeros(len(at_ns), dtype=bool)
    bounds = np.asarray(windows, dtype=np.int64).reshape(-1, 2)
    bounds = bounds[np.argsort(bounds[:, 0], kind="stable")]
    at = np.searchsorted(bounds[:, 0], at_ns, side="right") - 1
    return (at >= 0) & (at_ns < bounds[np.maximum(at, 0), 1])
