"""The input of the trace analyses, and what several of them share.

One ``RankTrace`` per rank: the rank's events as a DataFrame with the columns of
``profiler_app.traces.model.EVENT_COLUMNS`` (``kind``, ``name`` as an id into ``strings``,
``start_ns``, ``dur_ns``, ``correlation``, ``device``, ``stream``, ``track``, ``bytes``, ...).

GPU work ("GPU ops") is the kernels, memory copies and memory sets. Kernel types follow
Holistic Trace Analysis so that the numbers agree with it: COMM = NCCL/RCCL kernels, MEM =
memcpy/memset, COMP = every other kernel except names that HTA refuses to call computation
(containing "Memcpy" or "Sync"), which are OTHER.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from profiler_app.traces.timeline_read import TimelineReader
from profiler_app.traces.window import captured_label, consecutive_runs, step_cut
from tracefmt.columns import EVENT_COLUMNS
from tracefmt.kinds import GPU_OP_KINDS, EventKind
from tracefmt.names import COMM, COMP, MEM, OTHER, kernel_category

# Host-side events that enqueue GPU work; they share a correlation id with the GPU op.
LAUNCH_KINDS = (int(EventKind.CUDA_RUNTIME), int(EventKind.CUDA_DRIVER))

# Host calls linked to a GPU op that do not enqueue it but wait for it: CUDA's and HIP's blocking
# copies and sets (``cudaMemcpy``, ``cuMemcpyHtoD_v2``, ``hipMemset``). Every other runtime or
# driver call with a GPU op of its correlation id launched that op, whichever accelerator.
BLOCKING_CALL = re.compile(r"^(?:cuda|cu|hip)Mem(?:cpy|set)(?!.*(?:Async|WithStream))")

# One bit per type, so a sweep over all of them tells which types run at each instant.
TYPE_BITS = {COMP: 1, COMM: 2, MEM: 4, OTHER: 8}
N_STATES = 1 << len(TYPE_BITS)

# The event columns the analyses read; a store is read with these only.
ANALYSIS_COLUMNS = [
    "kind",
    "track",
    "name",
    "start_ns",
    "dur_ns",
    "correlation",
    "device",
    "stream",
    "bytes",
    "memcpy_kind",
    "bandwidth_gbps",
    "input_dims",
    "collective",
    # The event model (``traces.event_model``); ``parent`` is an index label of ``events``.
    "parent",
    "depth",
    "self_ns",
    "step",
    "is_step",
    "captured",
]
# The columns holding ids into the strings table (-1: none).
STRING_COLUMNS = ("name", "input_dims", "collective")


@dataclass(frozen=True)
class RankTrace:
    """``events`` is indexed by position in the rank's parts, one after the other; ``parts``
    holds (part id, events) of each, so an event's row in its part's store can be found."""

    rank: int
    events: pd.DataFrame
    strings: Sequence[str]
    parts: tuple[tuple[int, int], ...] = ()
    # A collector job's ranges Kineto recorded, as (k, 2) [start, end) rows (``captured_only``);
    # None: the trace is one recording. ``scope`` names them for evidence and captions.
    windows: np.ndarray | None = None
    scope: str = ""

    def window_of(self, times: np.ndarray) -> np.ndarray:
        """Which of ``windows`` each time lies in (-1: none; 0 for all without windows)."""
        if self.windows is None:
            return np.zeros(len(times), dtype=np.int64)
        at = np.searchsorted(self.windows[:, 0], times, side="right") - 1
        inside = (at >= 0) & (times < self.windows[np.maximum(at, 0), 1])
        return np.where(inside, at, -1)

    @classmethod
    def from_store(cls, rank: int, directory: str | Path, part_id: int = -1) -> RankTrace:
        """The events of a part's timeline store (``traces.ingest_trace``'s output)."""
        reader = TimelineReader(directory)
        events = reader.read_all(ANALYSIS_COLUMNS).to_pandas()
        for column in ANALYSIS_COLUMNS:  # a store written before the column existed
            if column not in events and column in EVENT_COLUMNS:
                dtype, absent = EVENT_COLUMNS[column]
                events[column] = np.full(len(events), absent, dtype=dtype)
        return cls(rank, events[ANALYSIS_COLUMNS], reader.strings, ((part_id, len(events)),))

    def part_rows(self) -> list[tuple[int, int]]:
        """[first, stop) positions in ``events`` of each part's events (one part when none are
        known). The index labels count the parts' rows, so this holds for a filtered trace."""
        if not self.parts:
            return [(0, len(self.events))]
        label_stops = np.cumsum([rows for _, rows in self.parts])
        stops = np.searchsorted(self.events.index.to_numpy(), label_stops).tolist()
        return list(zip([0, *stops[:-1]], stops, strict=True))

    def event_ref(self, position: int) -> str:
        """ "<part id>:@<store row>" of the event at ``position`` (an index label of
        ``events``), as the timeline's links select it; "" when the part is not known."""
        offset = 0
        for part_id, rows in self.parts:
            if position < offset + rows:
                return f"{part_id}:@{position - offset}" if part_id >= 0 else ""
            offset += rows
        return ""

    @cached_property
    def names(self) -> np.ndarray:
        """The strings table as an object array, for vectorised look-ups by id."""
        return np.asarray(self.strings, dtype=object)

    def labels(self, ids: np.ndarray) -> pd.Categorical:
        """Names for string ids, without building one Python string per row."""
        return pd.Categorical.from_codes(ids, categories=self.names)

    @cached_property
    def step_events(self) -> pd.DataFrame:
        """The rank's steps ("ProfilerStep#<n>", the collector's "step_<n>"), as the event
        model marks them."""
        return rows_where(self.events, self.events["is_step"].to_numpy())

    def positions(self, labels: np.ndarray) -> np.ndarray:
        """Positions in ``events`` of index labels (a ``parent``, say); -1 where absent."""
        return self.events.index.get_indexer(labels)

    @cached_property
    def gpu_ops(self) -> pd.DataFrame:
        """Kernels, memcpys and memsets with ``end_ns`` and ``type``, ordered by start."""
        events = self.events
        columns = ["kind", "name", "start_ns", "dur_ns", "correlation", "stream", "bytes"]
        is_op = events["kind"].isin(GPU_OP_KINDS).to_numpy()
        ops = rows_where(events[[*columns, "memcpy_kind"]], is_op)
        ops = ops.sort_values("start_ns", kind="stable")
        types = classify(self.names, ops["name"].to_numpy(), ops["kind"].to_numpy())
        return ops.assign(end_ns=ops["start_ns"] + ops["dur_ns"], type=types)

    @cached_property
    def launch_pairs(self) -> dict[str, np.ndarray]:
        """Each GPU op with the host call that enqueued it (a runtime or driver call of its
        correlation id, not a ``BLOCKING_CALL``), in the calls' order: correlation, call_name,
        call_start_ns, call_dur_ns, op_name, op_start_ns, op_dur_ns, stream."""
        events = self.events
        correlation = events["correlation"].to_numpy()
        names = events["name"].to_numpy()
        is_call = events["kind"].isin(LAUNCH_KINDS).to_numpy() & (correlation >= 0)
        blocking = [i for i in np.unique(names[is_call]) if BLOCKING_CALL.match(str(self.names[i]))]
        is_call &= ~np.isin(names, blocking)
        calls = np.flatnonzero(is_call)
        ops = self.gpu_ops[self.gpu_ops["correlation"] >= 0]
        op_correlation = ops["correlation"].to_numpy()
        by_id = np.argsort(op_correlation, kind="stable")
        ids = op_correlation[by_id]
        wanted = correlation[calls]
        at = np.minimum(np.searchsorted(ids, wanted), max(len(ids) - 1, 0))
        matched = (ids[at] == wanted) if len(ids) else np.zeros(len(calls), dtype=bool)
        calls, op_rows = calls[matched], by_id[at[matched]]

        def column(frame: pd.DataFrame, name: str, rows: np.ndarray) -> np.ndarray:
            return frame[name].to_numpy()[rows]

        return {
            "correlation": correlation[calls],
            "call_name": column(events, "name", calls),
            "call_start_ns": column(events, "start_ns", calls),
            "call_dur_ns": column(events, "dur_ns", calls),
            "op_name": column(ops, "name", op_rows),
            "op_start_ns": column(ops, "start_ns", op_rows),
            "op_dur_ns": column(ops, "dur_ns", op_rows),
            "stream": column(ops, "stream", op_rows),
        }

    @cached_property
    def state_ns(self) -> np.ndarray:
        """Nanoseconds during which each set of kernel types ran, indexed by the OR of their
        ``TYPE_BITS`` (index 0: nothing ran). One sweep over each type's merged intervals."""
        ops = self.gpu_ops
        types = ops["type"].to_numpy()
        start, end = ops["start_ns"].to_numpy(), ops["end_ns"].to_numpy()
        times, deltas = [], []
        for kernel_type, bit in TYPE_BITS.items():
            chosen = types == kernel_type
            starts, ends = merge_intervals(start[chosen], end[chosen])
            times += [starts, ends]
            deltas += [np.full(len(starts), bit), np.full(len(ends), -bit)]
        all_times = np.concatenate(times)
        order = np.argsort(all_times, kind="stable")
        state = np.cumsum(np.concatenate(deltas)[order])
        spans = np.diff(all_times[order])
        return np.bincount(state[:-1], weights=spans, minlength=N_STATES)


def classify(names: np.ndarray, name_ids: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """Kernel type of each GPU op (``tracefmt.names.kernel_category``, run once per distinct
    name); copies and sets are MEM whatever their name."""
    unique, inverse = np.unique(name_ids, return_inverse=True)
    per_name = np.array([kernel_category(str(names[i])) for i in unique], dtype=object)
    types = per_name[inverse.reshape(-1)] if len(unique) else np.array([], dtype=object)
    return np.where(kinds == EventKind.KERNEL, types, MEM)


def merge_intervals(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals (sorted by start) as disjoint (starts, ends); touching ones join."""
    if len(start) == 0:
        return start, end
    reach = np.maximum.accumulate(end)
    new = np.ones(len(start), dtype=bool)
    new[1:] = start[1:] > reach[:-1]
    first = np.flatnonzero(new)
    return start[first], np.maximum.reduceat(end, first)


def captured_only(trace: RankTrace) -> RankTrace:
    """The rank's events in the ranges Kineto recorded, and the steps it recorded: a collector
    job's trace figures are taken over those steps (an imported trace is captured whole). The
    ranges are the runs of consecutive captured steps."""
    captured = trace.events["captured"].to_numpy()
    if captured.all():
        return trace
    all_steps = trace.step_events
    steps = all_steps[all_steps["captured"].to_numpy()].sort_values("start_ns", kind="stable")
    number = steps["step"].to_numpy()
    first, last = consecutive_runs(number)  # consecutive captured steps: one recorded range
    start = steps["start_ns"].to_numpy()
    end = start + steps["dur_ns"].to_numpy()
    windows = np.stack([start[first], end[last]], axis=1)
    scope = captured_label(number, len(np.unique(all_steps["step"].to_numpy())))
    return replace(trace, events=rows_where(trace.events, captured), windows=windows, scope=scope)


def drop_last_step(trace: RankTrace, keep: np.ndarray | None = None) -> RankTrace:
    """The trace in the complete-steps window (``traces.window``): each of its parts without
    its last profiler step, as Holistic Trace Analysis reads each trace file (``keep``: its
    ``complete_steps_rows``, when known already)."""
    keep = complete_steps_rows(trace) if keep is None else keep
    if keep.all():
        return trace
    return replace(trace, events=rows_where(trace.events, keep))


def complete_steps_rows(trace: RankTrace) -> np.ndarray:
    """Which of the trace's events are in the complete-steps window."""
    events = trace.events
    kind = events["kind"].to_numpy()
    name = events["name"].to_numpy()
    start = events["start_ns"].to_numpy()
    correlation = events["correlation"].to_numpy()
    keep = np.ones(len(events), dtype=bool)
    for first, stop in trace.part_rows():
        rows = slice(first, stop)
        cut = step_cut(kind[rows], name[rows], trace.names, start[rows], correlation[rows])
        if cut is not None:
            keep[rows] = cut.keeps(kind[rows], start[rows], correlation[rows])
    return keep


def rows_where(events: pd.DataFrame, keep: np.ndarray) -> pd.DataFrame:
    """``events[keep]``, column by column: pandas takes rows from its 2-D blocks several times
    slower than numpy masks each 1-D column (a second per 10M events)."""
    return pd.DataFrame(
        {column: events[column].to_numpy()[keep] for column in events.columns},
        index=events.index[keep],
        copy=False,  # the masked arrays are new already: no second copy into 2-D blocks
    )


def describe(values: np.ndarray) -> dict[str, float]:
    """count, mean, std (sample), min, p25, p50, p75, max — pandas' describe() of ``values``."""
    if len(values) == 0:
        return {"count": 0}
    p25, p50, p75 = np.percentile(values, (25, 50, 75))
    return {
        "count": len(values),
        "mean": float(values.mean()),
        "std": float(values.std(ddof=1)) if len(values) > 1 else float("nan"),
        "min": float(values.min()),
        "p25": float(p25),
        "p50": float(p50),
        "p75": float(p75),
        "max": float(values.max()),
    }


def grouped_describe(frame: pd.DataFrame, keys: list[str], column: str) -> pd.DataFrame:
    """pandas' ``describe()`` of ``column`` per group (count, mean, sample std, min, linear
    quartiles, max), one row per group. Groups are few (ranks x streams), rows many: one
    integer sort, then numpy per group."""
    stats = ["count", "mean", "std", "min", "p25", "p50", "p75", "max"]
    if len(frame) == 0:
        return pd.DataFrame(columns=[*keys, *stats])
    groups = frame.groupby(keys, sort=True, observed=True)
    codes = groups.ngroup().to_numpy()
    values = frame[column].to_numpy(dtype=np.float64)[np.argsort(codes, kind="stable")]
    bounds = np.concatenate(([0], np.cumsum(np.bincount(codes))))
    rows = [describe(values[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    table = groups.size().index.to_frame(index=False)
    return pd.concat([table, pd.DataFrame(rows)[stats]], axis=1)
