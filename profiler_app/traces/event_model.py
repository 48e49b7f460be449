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
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from profiler_app.traces.correlation import CorrelationLookup, sizing_calls
from profiler_app.traces.nesting import nest, self_times
from tracefmt.kinds import DEVICE_KINDS, GPU_OP_KINDS, EventKind, of_kinds
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
# Events modelled at once: the working arrays of ``nest`` and ``self_times`` take about 100
# bytes an event, so a segment costs ~25 MB whatever the part's size.
_BATCH_ROWS = 1 << 18
Windows = Sequence[Sequence[int]] | None


def step_ids(strings: Sequence[str]) -> np.ndarray:
    """The number of the step each string names (-1: not a step name)."""
    numbers = [step_number(s) for s in strings]
    return np.array([-1 if n is None else n for n in numbers], dtype=np.int64)


@dataclass(frozen=True)
class PartFacts:
    """What an event's model needs from the rest of its part: when each host call started and
    the copy size a runtime call states (by correlation id), and the part's steps."""

    launch_start: CorrelationLookup
    call_bytes: CorrelationLookup
    step_start: np.ndarray
    step_end: np.ndarray
    step_number: np.ndarray


class FactGatherer:
    """Collects a part's ``PartFacts`` from its events in any order (a batch at a time, each
    with ``MODEL_INPUT_COLUMNS`` and ``bytes``), keeping only the few rows they need."""

    _KEYS = ("track", "start_ns", "dur_ns")

    def __init__(self, strings: Sequence[str]) -> None:
        self.numbers = step_numbers(strings)
        self.launches: list[dict[str, np.ndarray]] = []
        self.calls: list[dict[str, np.ndarray]] = []
        self.steps: list[dict[str, np.ndarray]] = []

    def add(self, c: dict[str, np.ndarray]) -> None:
        kind, correlation = c["kind"], c["correlation"]
        keep = {
            "launches": (~of_kinds(kind, DEVICE_KINDS) & (correlation >= 0), "start_ns"),
            "calls": (sizing_calls(kind, c["bytes"]), "bytes"),
            "steps": (_is_step(kind, _named_step(self.numbers, c["name"])), "name"),
        }
        for facts, (rows, value) in keep.items():
            rows = np.flatnonzero(rows)
            if len(rows):
                columns = ("correlation", value, *self._KEYS)
                getattr(self, facts).append({k: c[k][rows] for k in columns})

    def facts(self, offset_ns: int) -> PartFacts:
        """The facts with times moved by ``offset_ns``."""
        launches, calls, steps = (
            self._in_store_order(f) for f in (self.launches, self.calls, self.steps)
        )
        step_start = steps["start_ns"] + np.int64(offset_ns)
        return PartFacts(
            CorrelationLookup(launches["correlation"], launches["start_ns"] + np.int64(offset_ns)),
            CorrelationLookup(calls["correlation"], calls["bytes"]),
            step_start,
            step_start + steps["dur_ns"],
            _named_step(self.numbers, steps["name"]),
        )

    def _in_store_order(self, pieces: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        """The rows as the store orders them, so "the first event" means the same as there."""
        if not pieces:
            empty = np.zeros(0, dtype=np.int64)
            return {
                k: empty for k in ("correlation", "start_ns", "dur_ns", "bytes", "name", "track")
            }
        c = {k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}
        order = store_order(c["track"], c["start_ns"], c["dur_ns"])
        return {k: a[order] for k, a in c.items()}


def store_order(track: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """The order of events in a store: by track, start, the longer first among equal starts
    (the outer one, as ``traces.nesting`` nests them), then as they came (stable)."""
    order = np.lexsort((start, track))
    # Few events share a (track, start): order only those by duration.
    track_sorted, start_sorted = track[order], start[order]
    tie = np.flatnonzero(
        (track_sorted[1:] == track_sorted[:-1]) & (start_sorted[1:] == start_sorted[:-1])
    )
    if len(tie):
        members = np.union1d(tie, tie + 1)
        rows = order[members]
        order[members] = rows[
            np.lexsort((-dur[rows], start_sorted[members], track_sorted[members]))
        ]
    return order


def step_numbers(strings: Sequence[str]) -> np.ndarray:
    """``step_ids`` with an extra last entry (-1) for events without a known name."""
    return np.r_[step_ids(strings), -1]


def steps_among(kind: np.ndarray, name: np.ndarray, strings: Sequence[str]) -> np.ndarray:
    """Which events (``name`` ids into ``strings``) are steps, as the model marks ``is_step``."""
    return _is_step(kind, _named_step(step_numbers(strings), name.astype(np.int64)))


def _named_step(numbers: np.ndarray, name: np.ndarray) -> np.ndarray:
    """The step number each name id names (``step_numbers``), -1 for none."""
    unknown = len(numbers) - 1
    return numbers[np.where((name >= 0) & (name < unknown), name, unknown)]


def _is_step(kind: np.ndarray, named_step: np.ndarray) -> np.ndarray:
    return (of_kinds(kind, _STEP_KINDS) & (named_step >= 0)) | (kind == EventKind.STEP)


class EventModel:
    """The model columns of a part's events, computed a segment at a time: consecutive rows
    of the store that start where nothing earlier on their track is still open
    (``segments``), so an event and everything nested in it are in one segment."""

    def __init__(
        self, strings: Sequence[str], facts: PartFacts, captured_windows_ns: Windows
    ) -> None:
        self.numbers = step_numbers(strings)
        self.facts = facts
        self.captured_windows_ns = captured_windows_ns

    def columns(self, c: dict[str, np.ndarray], first_row: int) -> dict[str, np.ndarray]:
        """The model of a segment (``MODEL_INPUT_COLUMNS`` in store order, times on the
        part's clock) that starts at store row ``first_row``."""
        kind, start, dur = c["kind"], c["start_ns"], c["dur_ns"]
        end = start + dur
        parent, depth = nest(c["track"], start, end)
        self_ns = self_times(start, end, parent)
        named_step = _named_step(self.numbers, c["name"])
        is_step = _is_step(kind, named_step)
        at_ns = _launch_times(kind, start, c["correlation"], self.facts.launch_start)
        f = self.facts
        step = _step_of(at_ns, f.step_start, f.step_end, f.step_number)
        step[is_step] = named_step[is_step]
        if self.captured_windows_ns is None:
            captured = np.ones(len(kind), dtype=bool)
        else:
            # A step counts by its middle: the collector's step begins a moment before Kineto's.
            at_ns = np.where(is_step, start + dur // 2, at_ns)
            captured = _in_windows(at_ns, self.captured_windows_ns)
        return {
            "depth": depth.astype(np.int32),
            "parent": np.where(parent >= 0, parent + first_row, -1),
            "self_ns": self_ns,
            "step": step.astype(np.int32),
            "is_step": is_step,
            "captured": captured,
        }


def build_event_model(
    columns: dict[str, np.ndarray],
    strings: Sequence[str],
    captured_windows_ns: Windows = None,
) -> dict[str, np.ndarray]:
    """The model columns of a whole part's events (``MODEL_INPUT_COLUMNS``, in store order).
    The captured windows: the ranges a collector part's Kineto recorded; None for a part
    recorded whole."""
    gatherer = FactGatherer(strings)
    gatherer.add({"bytes": np.full(len(columns["kind"]), -1, dtype=np.int64), **columns})
    model = EventModel(strings, gatherer.facts(0), captured_windows_ns)
    n = len(columns["kind"])
    out = {
        name: np.zeros(n, dtype=MODEL_SCHEMA.field(name).type.to_pandas_dtype())
        for name in MODEL_COLUMNS
    }
    end = columns["start_ns"] + columns["dur_ns"]
    for a, b in segments(columns["track"], columns["start_ns"], end, _BATCH_ROWS):
        part = model.columns({k: v[a:b] for k, v in columns.items()}, a)
        for name, values in part.items():
            out[name][a:b] = values
    return out


def has_event_model(events: pq.ParquetFile) -> bool:
    return all(name in events.schema_arrow.names for name in MODEL_COLUMNS)


def segments(track: np.ndarray, start: np.ndarray, end: np.ndarray, rows: int) -> zip:
    """(first, stop) ranges of store rows, about ``rows`` long, each starting at a row where no
    earlier event of its track is still open (``free_rows``); a single tree longer than
    ``rows`` is one range."""
    free = free_rows(track, start, end)
    cuts = np.unique(free[np.searchsorted(free, np.arange(0, len(track), rows), "right") - 1])
    return zip(cuts, np.r_[cuts[1:], len(track)], strict=True)


def free_rows(track: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The rows (store order) at which no earlier event of the row's track is still open: a
    track's first row, and a row starting at or after every earlier end on its track."""
    if not len(track):
        return np.zeros(0, dtype=np.int64)
    reach = pd.Series(end).groupby(track, sort=False).cummax().to_numpy()
    new_track = np.r_[True, track[1:] != track[:-1]]
    return np.flatnonzero(new_track | np.r_[True, start[1:] >= reach[:-1]])


def launch_times(kind: np.ndarray, start: np.ndarray, correlation: np.ndarray) -> np.ndarray:
    """When each event happened for the host: its start, or for GPU work the start of the
    call that launched it (same correlation id) when the trace holds that call."""
    host = np.flatnonzero(~of_kinds(kind, DEVICE_KINDS) & (correlation >= 0))
    return _launch_times(
        kind, start, correlation, CorrelationLookup(correlation[host], start[host])
    )


def _launch_times(
    kind: np.ndarray, start: np.ndarray, correlation: np.ndarray, calls: CorrelationLookup
) -> np.ndarray:
    at = start.copy()
    gpu = np.flatnonzero(of_kinds(kind, GPU_OP_KINDS) & (correlation >= 0))
    found, call_start = calls.find(correlation[gpu])
    at[gpu[found]] = call_start
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
