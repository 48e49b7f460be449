"""The operator table, like ``torch.profiler``'s ``key_averages()``.

Host events of a thread nest (an operator calls operators, an annotation holds operators, an
operator calls the CUDA runtime). Nesting and self time are the store's event model
(``traces.event_model``); CPU memory allocated (Kineto's "[memory]" events, with
``profile_memory=True``) is charged to the innermost event running at that instant, and its
total includes its children's.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from profiler_app.analysis.events import RankTrace, sums_by_key
from profiler_app.traces.nesting import subtree_sums
from tracefmt.kinds import HOST_KINDS, EventKind, of_kinds
from tracefmt.names import steps_as_one

# The host events ``key_averages()`` lists: a thread's stack less its Python frames.
OPERATOR_KINDS = tuple(k for k in HOST_KINDS if k != EventKind.PYTHON_FUNCTION)
MEMORY_EVENT = "[memory]"


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


def self_time_by_name(
    name_ids: np.ndarray, self_ns: np.ndarray, is_step: np.ndarray, names: np.ndarray
) -> pd.DataFrame:
    """Calls and self time per operator name (``names``: the strings table, by id), largest
    first, ties by name: ``operator_table``'s name, count and self_ns from three columns of the
    operators, without its other columns and their copies."""
    name_ids, stepped = steps_as_one(name_ids, is_step, list(names))
    labels = np.append(np.asarray(stepped, dtype=object), "")  # id -1 (no name): ""
    ids = np.where(name_ids >= 0, name_ids, len(labels) - 1)
    counts = np.bincount(ids, minlength=len(labels))
    sums = np.zeros(len(labels), dtype=np.int64)
    np.add.at(sums, ids, self_ns.astype(np.int64, copy=False))
    present = np.flatnonzero(counts)
    table = pd.DataFrame(
        {
            "name": labels[present],
            "count": counts[present].astype(np.int64),
            "self_ns": sums[present],
        }
    )
    return table.sort_values(["self_ns", "name"], ascending=[False, True], ignore_index=True)


def _operator_rows(trace: RankTrace) -> pd.DataFrame:
    events = trace.events
    kind = events["kind"].to_numpy()
    # The steps are one row, "ProfilerStep*" or "step_*", as key_averages() lists them.
    name, names = steps_as_one(
        events["name"].to_numpy(), events["is_step"].to_numpy(), list(trace.names)
    )
    ops = np.flatnonzero(of_kinds(kind, OPERATOR_KINDS))
    keys = ["name", "input_dims"]
    columns = {
        "name": name[ops],
        "input_dims": events["input_dims"].to_numpy()[ops],
        "total_ns": events["dur_ns"].to_numpy()[ops],
        "self_ns": events["self_ns"].to_numpy()[ops],
    }
    is_memory = (
        (kind == EventKind.INSTANT)
        & (name == _string_id(trace, MEMORY_EVENT))
        & (events["bytes"].to_numpy() != -1)
        & (events["device"].to_numpy() < 0)
    )
    if is_memory.any():
        # An allocation is the innermost event's running at that instant (its parent), and
        # counts in the total of every event around that one.
        parent = trace.parent_rows
        allocated = np.where(is_memory, events["bytes"].to_numpy(), 0).astype(np.float64)
        charged = is_memory & (parent >= 0)
        own = np.bincount(parent[charged], weights=allocated[charged], minlength=len(kind))
        depth = events["depth"].to_numpy()
        columns["self_cpu_memory_bytes"] = own[ops]
        columns["cpu_memory_bytes"] = subtree_sums(own, parent, depth)[ops]
    table = sums_by_key(columns, keys)
    table["name"] = np.asarray(names, dtype=object)[table["name"].to_numpy()]
    dims = table["input_dims"].to_numpy()
    table["input_dims"] = np.where(dims >= 0, trace.names[np.maximum(dims, 0)], "")
    table.insert(0, "rank", trace.rank)
    return table


def _string_id(trace: RankTrace, text: str) -> int:
    matches = np.flatnonzero(trace.names == text)
    return int(matches[0]) if len(matches) else -2
