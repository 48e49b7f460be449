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
  rest of its steps being annotations and samples only. GPU work counts by its launch;
- ``launch``: for a GPU op, the store row of the host call that launched it (the first host
  event of its correlation id); for such a host call, the row of its first GPU op (by start);
  -1 for every other event;
- ``in_complete_steps``: whether the event lies in the complete steps (``traces.window``): a
  part with two or more profiler steps leaves out host events from its last one's start on, and
  GPU ops whose launch was then (or whose launch is not in the part).

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
from tracefmt.names import PROFILER_STEP_RE, step_number

MODEL_SCHEMA = pa.schema(
    [
        ("depth", pa.int32()),
        ("parent", pa.int64()),
        ("self_ns", pa.int64()),
        ("step", pa.int32()),
        ("is_step", pa.bool_()),
        ("captured", pa.bool_()),
        ("launch", pa.int64()),
        ("in_complete_steps", pa.bool_()),
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
    """What an event's model needs from the rest of its part: the store row and start of the
    host call of each correlation id, the row of its first GPU op and the copy size a runtime
    call states, the part's steps, and where its complete steps end (None: the part has
    fewer than two profiler steps and is whole in both windows)."""

    call_row: CorrelationLookup
    call_start: CorrelationLookup
    first_op_row: CorrelationLookup
    call_bytes: CorrelationLookup
    step_start: np.ndarray
    step_end: np.ndarray
    step_number: np.ndarray
    complete_steps_end_ns: int | None


class FactGatherer:
    """Collects a part's ``PartFacts`` from its events in store order (a window at a time,
    each with ``MODEL_INPUT_COLUMNS`` and ``bytes``, and the store row it starts at), keeping
    only the few rows they need."""

    def __init__(self, strings: Sequence[str]) -> None:
        self.numbers = step_numbers(strings)
        self.profiler_step = np.r_[[bool(PROFILER_STEP_RE.search(s)) for s in strings], False]
        self.calls: list[dict[str, np.ndarray]] = []
        self.ops: list[dict[str, np.ndarray]] = []
        self.sizing: list[dict[str, np.ndarray]] = []
        self.steps: list[dict[str, np.ndarray]] = []
        self.profiler_steps: list[dict[str, np.ndarray]] = []

    def add(self, c: dict[str, np.ndarray], first_row: int) -> None:
        kind, correlation = c["kind"], c["correlation"]
        c = {**c, "row": np.arange(first_row, first_row + len(kind), dtype=np.int64)}
        named = _named(self.profiler_step, c["name"])
        keep = {
            "calls": (_host_call(kind, correlation), ("correlation", "start_ns", "row")),
            "ops": (_linked_op(kind, correlation), ("correlation", "start_ns", "row")),
            "sizing": (sizing_calls(kind, c["bytes"]), ("correlation", "bytes")),
            "steps": (
                _is_step(kind, _named_step(self.numbers, c["name"])),
                ("name", "start_ns", "dur_ns"),
            ),
            # Any kind counts towards the number of profiler steps; only the host's say where
            # the last one starts: the GPU's copy of it starts after its first launches.
            "profiler_steps": (named, ("name", "start_ns", "kind")),
        }
        for facts, (rows, columns) in keep.items():
            rows = np.flatnonzero(rows)
            if len(rows):
                getattr(self, facts).append({k: c[k][rows] for k in columns})

    def facts(self, offset_ns: int) -> PartFacts:
        """The facts with times moved by ``offset_ns``."""
        calls, ops, sizing, steps, profiler_steps = (
            _joined(f) for f in (self.calls, self.ops, self.sizing, self.steps, self.profiler_steps)
        )
        offset = np.int64(offset_ns)
        step_start = steps["start_ns"] + offset
        first_ops = np.lexsort((ops["row"], ops["start_ns"]))
        return PartFacts(
            CorrelationLookup(calls["correlation"], calls["row"]),
            CorrelationLookup(calls["correlation"], calls["start_ns"] + offset),
            CorrelationLookup(ops["correlation"][first_ops], ops["row"][first_ops]),
            CorrelationLookup(sizing["correlation"], sizing["bytes"]),
            step_start,
            step_start + steps["dur_ns"],
            _named_step(self.numbers, steps["name"]),
            _complete_steps_end(profiler_steps, offset_ns),
        )


def _joined(pieces: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The gathered rows of one fact, in store order (so "the first event" means the same as
    there)."""
    if not pieces:
        empty = np.zeros(0, dtype=np.int64)
        return {
            k: empty for k in ("correlation", "start_ns", "dur_ns", "bytes", "name", "row", "kind")
        }
    return {k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}


def _complete_steps_end(profiler_steps: dict[str, np.ndarray], offset_ns: int) -> int | None:
    """Where a part's complete steps end: the start of its last profiler step on the host;
    None with fewer than two profiler steps (or none on the host)."""
    host = ~of_kinds(profiler_steps["kind"], DEVICE_KINDS)
    if len(np.unique(profiler_steps["name"])) < 2 or not host.any():
        return None
    return int(profiler_steps["start_ns"][host].max()) + offset_ns


def _host_call(kind: np.ndarray, correlation: np.ndarray) -> np.ndarray:
    """Host events linked to GPU work by correlation id."""
    return ~of_kinds(kind, DEVICE_KINDS) & (correlation >= 0)


def _linked_op(kind: np.ndarray, correlation: np.ndarray) -> np.ndarray:
    """GPU ops that carry the correlation id of their launch."""
    return of_kinds(kind, GPU_OP_KINDS) & (correlation >= 0)


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
    return _named(numbers, name)


def _named(by_name: np.ndarray, name: np.ndarray) -> np.ndarray:
    """The value of each name id in ``by_name`` (one per string, then one for unknown ids)."""
    unknown = len(by_name) - 1
    return by_name[np.where((name >= 0) & (name < unknown), name, unknown)]


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
        f = self.facts
        launch, at_ns, unlaunched = _launches(kind, start, c["correlation"], f)
        step = _step_of(at_ns, f.step_start, f.step_end, f.step_number)
        step[is_step] = named_step[is_step]
        if f.complete_steps_end_ns is None:
            in_complete_steps = np.ones(len(kind), dtype=bool)
        else:
            # A GPU op whose launch is not in the part is not known to be complete.
            in_complete_steps = (at_ns < f.complete_steps_end_ns) & ~unlaunched
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
            "launch": launch,
            "in_complete_steps": in_complete_steps,
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
    gatherer.add({"bytes": np.full(len(columns["kind"]), -1, dtype=np.int64), **columns}, 0)
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
    host = np.flatnonzero(_host_call(kind, correlation))
    at = start.copy()
    gpu = np.flatnonzero(_linked_op(kind, correlation))
    found, call_start = CorrelationLookup(correlation[host], start[host]).find(correlation[gpu])
    at[gpu[found]] = call_start
    return at


def _launches(
    kind: np.ndarray, start: np.ndarray, correlation: np.ndarray, facts: PartFacts
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each event's ``launch`` column; when it happened for the host (``launch_times``); and
    which events are GPU ops whose launch is not in the part."""
    launch = np.full(len(kind), -1, dtype=np.int64)
    at_ns = start.copy()
    ops = np.flatnonzero(_linked_op(kind, correlation))
    found, rows = facts.call_row.find(correlation[ops])
    launched = ops[found]
    launch[launched] = rows
    at_ns[launched] = facts.call_start.find(correlation[launched])[1]
    unlaunched = np.zeros(len(kind), dtype=bool)
    unlaunched[ops[~found]] = True
    calls = np.flatnonzero(_host_call(kind, correlation))
    found, rows = facts.first_op_row.find(correlation[calls])
    launch[calls[found]] = rows
    return launch, at_ns, unlaunched


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
