"""The input of the trace analyses, and what several of them share.

One ``RankTrace`` per rank: the rank's events as a DataFrame with the columns of
``profiler_app.traces.model.EVENT_COLUMNS`` (``kind``, ``name`` as an id into ``strings``,
``start_ns``, ``dur_ns``, ``correlation``, ``device``, ``stream``, ``track``, ``bytes``, ...).

GPU work ("GPU ops") is ``tracefmt.kinds.GPU_OP_KINDS``: kernels, memory copies and sets, and
the device-side waits (HTA lists them all as GPU kernels). Kernel types follow
Holistic Trace Analysis so that the numbers agree with it: COMM = NCCL/RCCL kernels, MEM =
memcpy/memset, COMP = every other kernel except names that HTA refuses to call computation
(containing "Memcpy" or "Sync"), which are OTHER.

One module on purpose (near 470 lines): ``RankTrace`` and the few grouping helpers every
analysis uses are the layer's common vocabulary; each analysis is a module of its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from profiler_app.traces.store_layout import StoreAwaitsUpgrade
from profiler_app.traces.timeline_read import TimelineReader
from profiler_app.traces.window import captured_label, consecutive_runs
from tracefmt.columns import EVENT_COLUMNS
from tracefmt.kinds import COPY_KINDS, GPU_OP_KINDS, LAUNCH_KINDS, of_kinds
from tracefmt.names import COMM, COMP, MEM, OTHER, kernel_category
from tracefmt.strings import present_ids

# Host calls linked to a GPU op that do not enqueue it but wait for it: CUDA's and HIP's blocking
# copies and sets (``cudaMemcpy``, ``cuMemcpyHtoD_v2``, ``hipMemset``). Every other runtime or
# driver call with a GPU op of its correlation id launched that op, whichever accelerator.
BLOCKING_CALL = re.compile(r"^(?:cuda|cu|hip)Mem(?:cpy|set)(?!.*(?:Async|WithStream))")

# One bit per type, so a sweep over all of them tells which types run at each instant.
TYPE_BITS = {COMP: 1, COMM: 2, MEM: 4, OTHER: 8}
TYPES = list(TYPE_BITS)
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
    # The event model (``traces.event_model``); ``parent`` and ``launch`` are index labels of
    # ``events``.
    "parent",
    "depth",
    "self_ns",
    "step",
    "is_step",
    "captured",
    "launch",
    "in_complete_steps",
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
    def from_store(
        cls,
        rank: int,
        directory: str | Path,
        part_id: int = -1,
        rows: np.ndarray | None = None,
        columns: Sequence[str] = ANALYSIS_COLUMNS,
    ) -> RankTrace:
        """The events of a part's timeline store (``traces.ingest_trace``'s output), as
        ``from_reader`` reads them."""
        return cls.from_reader(rank, TimelineReader(directory), part_id, rows, columns)

    @classmethod
    def from_reader(
        cls,
        rank: int,
        reader: TimelineReader,
        part_id: int = -1,
        rows: np.ndarray | None = None,
        columns: Sequence[str] = ANALYSIS_COLUMNS,
    ) -> RankTrace:
        """The events of the store ``reader`` reads that ``rows`` selects (a mask of its rows;
        None: all), as a trace filtered to them (its index labels are their rows), of
        ``columns``."""
        if awaiting := [c for c in reader.missing_model_columns if c in columns]:
            raise StoreAwaitsUpgrade(reader.directory, awaiting)
        stored = set(reader.events.schema_arrow.names)
        read = reader.columns([c for c in columns if c in stored], rows)
        n_rows = reader.n_events if rows is None else int(np.count_nonzero(rows))
        for column in columns:
            if column not in stored:  # a store written before the column existed
                dtype, absent = EVENT_COLUMNS[column]
                read[column] = np.full(n_rows, absent, dtype=dtype)
        index = None if rows is None else pd.RangeIndex(reader.n_events)[rows]
        events = pd.DataFrame({c: read[c] for c in columns}, index=index, copy=False)
        return cls(rank, events, reader.strings, ((part_id, reader.n_events),))

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
        index = self.events.index
        if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
            # A rank read whole: labels are positions (pandas would look each one up).
            return np.where((labels >= 0) & (labels < len(index)), labels, -1)
        return index.get_indexer(labels)

    @cached_property
    def present_names(self) -> np.ndarray:
        """The string ids some event is named by, ascending (``np.unique`` of the names, in one
        pass: the ids are small)."""
        return present_ids(self.events["name"].to_numpy())

    @cached_property
    def parent_rows(self) -> np.ndarray:
        """Each event's parent (``traces.event_model``) as a position in ``events``; -1: none."""
        return self.positions(self.events["parent"].to_numpy())

    @cached_property
    def gpu_op_rows(self) -> np.ndarray:
        """Positions in ``events`` of the kernels, memcpys and memsets, ordered by start."""
        events = self.events
        rows = np.flatnonzero(of_kinds(events["kind"].to_numpy(), GPU_OP_KINDS))
        return rows[np.argsort(events["start_ns"].to_numpy()[rows], kind="stable")]

    @cached_property
    def gpu_ops(self) -> pd.DataFrame:
        """Kernels, memcpys and memsets with ``end_ns`` and ``type``, ordered by start."""
        events, rows = self.events, self.gpu_op_rows
        columns = ["kind", "name", "start_ns", "dur_ns", "correlation", "stream", "bytes"]
        ops = {column: events[column].to_numpy()[rows] for column in [*columns, "memcpy_kind"]}
        ops["end_ns"] = ops["start_ns"] + ops["dur_ns"]
        ops["type"] = classify(self.names, ops["name"], ops["kind"])
        return pd.DataFrame(ops, index=events.index[rows], copy=False)

    def restricted(self, keep: np.ndarray, **changes: Any) -> RankTrace:
        """The trace of the events ``keep`` selects (and ``changes`` of its other fields). The
        GPU ops already derived are carried over, cut the same way, not derived again: the
        complete steps of a rank are its captured events less a few."""
        kept = replace(self, events=rows_where(self.events, keep), **changes)
        if "gpu_op_rows" in self.__dict__:  # what ``cached_property`` holds
            chosen = keep[self.gpu_op_rows]
            rows = self.gpu_op_rows[chosen]
            # A kept row moves up by the rows left out before it (few: no cumulative sum of all).
            left_out = np.flatnonzero(~keep)
            kept.__dict__["gpu_op_rows"] = rows - np.searchsorted(left_out, rows)
            if "gpu_ops" in self.__dict__:
                kept.__dict__["gpu_ops"] = rows_where(self.gpu_ops, chosen)
        return kept

    def named(self, name_ids: np.ndarray, wanted: frozenset[str]) -> np.ndarray:
        """Which of ``name_ids`` (ids into ``strings``) name one of ``wanted``."""
        return per_name(self.names, name_ids, lambda name: name in wanted).astype(bool)

    @cached_property
    def launch_pairs(self) -> dict[str, np.ndarray]:
        """Each host call that enqueued GPU work (a runtime or driver call, not a
        ``BLOCKING_CALL``) with its first GPU op (the event model's ``launch``), in the calls'
        order: correlation, call_name, call_start_ns, call_dur_ns, op_name, op_start_ns,
        op_dur_ns, stream."""
        events = self.events
        names = events["name"].to_numpy()
        launch = events["launch"].to_numpy()
        is_call = of_kinds(events["kind"].to_numpy(), LAUNCH_KINDS) & (launch >= 0)
        blocking = [
            i for i in present_ids(names[is_call]) if BLOCKING_CALL.match(str(self.names[i]))
        ]
        is_call &= ~np.isin(names, blocking)
        calls = np.flatnonzero(is_call)
        op_rows = self.positions(launch[calls])
        calls, op_rows = calls[op_rows >= 0], op_rows[op_rows >= 0]

        def column(name: str, rows: np.ndarray) -> np.ndarray:
            return events[name].to_numpy()[rows]

        return {
            "correlation": column("correlation", calls),
            "call_name": names[calls],
            "call_start_ns": column("start_ns", calls),
            "call_dur_ns": column("dur_ns", calls),
            "op_name": names[op_rows],
            "op_start_ns": column("start_ns", op_rows),
            "op_dur_ns": column("dur_ns", op_rows),
            "stream": column("stream", op_rows),
        }

    def complete_steps(self) -> RankTrace:
        """The trace in the complete-steps window (``traces.window``): the events the event
        model marks ``in_complete_steps``, each part without its last profiler step as Holistic
        Trace Analysis reads each trace file."""
        keep = self.events["in_complete_steps"].to_numpy()
        return self if keep.all() else self.restricted(keep)

    @cached_property
    def state_ns(self) -> np.ndarray:
        """Nanoseconds during which each set of kernel types ran, indexed by the OR of their
        ``TYPE_BITS`` (index 0: nothing ran). One sweep over each type's merged intervals."""
        ops = self.gpu_ops
        types = ops["type"].cat.codes.to_numpy()  # positions in TYPES
        start, end = ops["start_ns"].to_numpy(), ops["end_ns"].to_numpy()
        times, deltas = [], []
        for code, bit in enumerate(TYPE_BITS.values()):
            chosen = types == code
            starts, ends = merge_intervals(start[chosen], end[chosen])
            times += [starts, ends]
            deltas += [np.full(len(starts), bit), np.full(len(ends), -bit)]
        all_times = np.concatenate(times)
        order = np.argsort(all_times, kind="stable")
        state = np.cumsum(np.concatenate(deltas)[order])
        spans = np.diff(all_times[order])
        return np.bincount(state[:-1], weights=spans, minlength=N_STATES)


def classify(names: np.ndarray, name_ids: np.ndarray, kinds: np.ndarray) -> pd.Categorical:
    """Kernel type of each GPU op (``tracefmt.names.kernel_category``, run once per distinct
    name: a kernel's and a device-side wait's, as HTA types them); copies and sets are MEM
    whatever their name. Categorical over ``TYPES``: as Python
    strings, pandas would copy them into an Arrow string column."""
    of_kernel = per_name(names, name_ids, lambda name: TYPES.index(kernel_category(name)))
    codes = np.where(of_kinds(kinds, COPY_KINDS), TYPES.index(MEM), of_kernel)
    return pd.Categorical.from_codes(codes.astype(np.int8), TYPES)


def per_name(names: np.ndarray, name_ids: np.ndarray, of_name: Callable[[str], int]) -> np.ndarray:
    """``of_name`` of the name of each id in ``name_ids`` (ids into ``names``; -1, no name,
    reads as ""), worked out once per distinct id: a table by id, then one look-up per row."""
    present = present_ids(name_ids)
    # One slot more at the end, which -1 reads.
    table = np.full(int(present[-1]) + 2 if len(present) else 1, of_name(""), dtype=np.int64)
    table[present] = [of_name(str(names[i])) for i in present]
    return table[name_ids]


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
    return trace.restricted(captured, windows=windows, scope=scope)


def rows_where(events: pd.DataFrame, keep: np.ndarray) -> pd.DataFrame:
    """``events[keep]``, column by column: pandas takes rows from its 2-D blocks several times
    slower than numpy takes them from each 1-D column (a second per 10M events). Taken by
    position, which costs what a mask does for most rows and nothing for a few (the steps)."""
    rows = np.flatnonzero(keep)
    return pd.DataFrame(
        # ``array``: a categorical column's codes are taken, not its values as Python objects.
        {column: events[column].array.take(rows) for column in events.columns},
        index=events.index[rows],
        copy=False,  # the arrays taken are new already: no second copy into 2-D blocks
    )


def describe(values: np.ndarray) -> dict[str, float]:
    """count, mean, std (sample), min, p25, p50, p75, max — pandas' describe() of ``values``."""
    if len(values) == 0:
        return {"count": 0}
    low, (p25, p50, p75), high = min_quartiles_max(values)
    return {
        "count": len(values),
        "mean": float(values.mean()),
        "std": float(values.std(ddof=1)) if len(values) > 1 else float("nan"),
        "min": float(low),
        "p25": float(p25),
        "p50": float(p50),
        "p75": float(p75),
        "max": float(high),
    }


QUARTILES = (0.25, 0.5, 0.75)


def min_quartiles_max(values: np.ndarray) -> tuple[float, list[float], float]:
    """The minimum, the quartiles and the maximum of ``values`` (not empty), equal to
    ``np.min``, ``np.percentile(values, (25, 50, 75))`` (its linear interpolation, to the
    bit) and ``np.max``, from one partition of the values instead of four passes."""
    n = len(values)
    virtual = [(n - 1) * q for q in QUARTILES]  # numpy's virtual index for "linear"
    before = [min(int(v), n - 1) for v in virtual]
    after = [min(b + 1, n - 1) for b in before]
    ordered = np.partition(values, sorted({0, n - 1, *before, *after}))
    if np.isnan(ordered[n - 1]):  # NaN sorts last: as numpy, every figure is NaN
        return np.nan, [np.nan] * len(QUARTILES), np.nan
    found = []
    for v, b, a in zip(virtual, before, after, strict=True):
        low, high, t = ordered[b], ordered[a], v - b
        diff = high - low
        # numpy's ``_lerp``: from the nearer end, so that t = 1 gives ``high`` exactly.
        found.append(high - diff * (1 - t) if t >= 0.5 else low + diff * t)
    return ordered[0], found, ordered[n - 1]


def sums_by_key(columns: dict[str, np.ndarray], keys: list[str]) -> pd.DataFrame:
    """``groupby(keys, sort=False)`` of two integer ``keys`` columns (string ids, kinds): the
    keys, ``count``, and the sum of every other column, groups in the order they first appear.
    Numbered by ``_groups_in_order``, summed by numpy: pandas' groupby over two keys costs
    several times as much per rank."""
    first, second = (columns[key].astype(np.int64) for key in keys)
    group, first_keys, second_keys = _groups_in_order(first, second)
    table = {
        keys[0]: first_keys.astype(columns[keys[0]].dtype),
        keys[1]: second_keys.astype(columns[keys[1]].dtype),
    }
    n_groups = len(first_keys)
    table["count"] = np.bincount(group, minlength=n_groups)
    for column, values in columns.items():
        if column not in keys:
            sums = np.zeros(n_groups, dtype=values.dtype)
            np.add.at(sums, group, values)  # exact in integers, unlike bincount's floats
            table[column] = sums
    return pd.DataFrame(table)


def _groups_in_order(
    first: np.ndarray, second: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's group of equal (first, second), groups numbered in the order they first
    appear, and each group's two keys. Keys of a small range (a kind and a name id) are
    numbered by their earliest row in a table of every pair, three times faster than hashing
    them (the table no larger than the rows); others are hashed as one integer (ids fit 32
    bits)."""
    if len(first):
        low_first, low_second = int(first.min()), int(second.min())
        width = int(second.max()) - low_second + 1
        slots = (int(first.max()) - low_first + 1) * width
        if slots <= len(first):
            pair = (first - low_first) * width + (second - low_second)
            earliest = np.full(slots, len(pair), dtype=np.int64)
            np.minimum.at(earliest, pair, np.arange(len(pair)))
            present = np.flatnonzero(earliest < len(pair))
            present = present[np.argsort(earliest[present])]
            number = np.zeros(slots, dtype=np.int64)
            number[present] = np.arange(len(present))
            high, rest = np.divmod(present, width)
            return number[pair], high + low_first, rest + low_second
    group, found = pd.factorize((first << 32) | (second & 0xFFFFFFFF))
    return group, found >> 32, (found & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def grouped_describe(frame: pd.DataFrame, keys: list[str], column: str) -> pd.DataFrame:
    """pandas' ``describe()`` of ``column`` per group (count, mean, sample std, min, linear
    quartiles, max), one row per group, groups in key order as ``groupby(keys, observed=True)``
    gives them. Groups are few (ranks x streams), rows many: each key is numbered by hashing,
    the rows ordered by group with a radix sort, then numpy describes each group."""
    if len(frame) == 0:
        return pd.DataFrame(columns=[*keys, *DESCRIBED])
    return describe_groups(*group_numbers(frame, keys), frame[column].to_numpy(np.float64))


DESCRIBED = ["count", "mean", "std", "min", "p25", "p50", "p75", "max"]


def describe_groups(group: np.ndarray, labels: pd.DataFrame, values: np.ndarray) -> pd.DataFrame:
    """``grouped_describe`` of ``values`` by ``group_numbers``' numbers and labels."""
    values = values[np.argsort(group, kind="stable")]
    bounds = np.concatenate(([0], np.cumsum(np.bincount(group))))
    rows = [describe(values[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    return pd.concat([labels, pd.DataFrame(rows)[DESCRIBED]], axis=1)


def group_numbers(frame: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Each row's group (0, 1, ... in key order) as small integers, and each group's keys."""
    codes, uniques = [], []
    for key in keys:
        code, unique = _numbered(frame[key])
        codes.append(code.astype(np.int64))
        uniques.append(unique)
    combined = np.zeros(len(frame), dtype=np.int64)
    for code, unique in zip(codes, uniques, strict=True):
        combined = combined * len(unique) + code
    group, present = _counted(combined)
    # A stable sort of integers of 16 bits or fewer is a radix sort.
    group = group.astype(np.int16) if len(present) <= np.iinfo(np.int16).max else group
    labels = {}
    for key, unique in reversed(list(zip(keys, uniques, strict=True))):
        present, digit = np.divmod(present, len(unique))
        labels[key] = unique[digit]
    return group, pd.DataFrame({key: labels[key] for key in keys})


def _numbered(values: pd.Series) -> tuple[np.ndarray, Any]:
    """Each value's number among the distinct values, in their order, and those values.
    Integers of a small range (ranks, streams) are counted, not hashed and sorted."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        categories = values.cat.categories
        return values.cat.codes.to_numpy(), pd.Categorical(categories, categories=categories)
    array = values.to_numpy()
    if array.dtype.kind in "iu" and len(array):
        low = int(array.min())
        span = int(array.max()) - low
        if span == 0:  # one value (a rank's own tables)
            return np.zeros(len(array), dtype=np.int64), array[:1]
        if span <= 4 * len(array):
            number, present = _counted(array.astype(np.int64) - low)
            return number, (present + low).astype(array.dtype)
    return pd.factorize(array, sort=True)


def _counted(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each of the non-negative ``values`` (not empty) numbered 0, 1, ... in value order, and
    the distinct values: by counting them, not by hashing or sorting."""
    present = np.flatnonzero(np.bincount(values))
    number = np.zeros(present[-1] + 1, dtype=np.int64)
    number[present] = np.arange(len(present))
    return number[values], present
