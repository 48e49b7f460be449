"""Cluster analyses: per-step breakdown and collectives of one rank (computed at ingest), and
the cross-rank statistics read at query time (slow ranks, bandwidth, sync wait, job diff).

Pure: standard library, numpy and pandas only. Times are integer nanoseconds.

Step breakdown, per step window [start_ns, start_ns + dur_ns) of a step annotation
(``ProfilerStep#n``, ``step_n``), over the computation kernels (HTA's COMP type) that start in it:

    gap_ns      step start → first computation kernel start (data loading, host work, launch)
    compute_ns  first computation kernel start → last computation kernel end (forward+backward)
    tail_ns     last computation kernel end → step end (communication, synchronisation)

so gap + compute + tail = the step time. A step without computation is all gap. A trace without
step annotations is one inferred step spanning its GPU work.

One module on purpose (near 470 lines): the per-rank frames (at ingest) and the cross-rank
statistics (at query time) share their columns and collective labels, kept in step here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from profiler_app.analysis.events import (
    COMM,
    COMP,
    RankTrace,
    captured_only,
    rows_where,
)
from profiler_app.analysis.gpu_time import comm_comp_overlap
from profiler_app.traces.timeline_read import TimelineReader
from profiler_app.traces.window import COMPLETE_STEPS, WHOLE_TRACE, StepCut
from tracefmt.kinds import GPU_OP_KINDS

# The event columns the per-rank analysis reads from a timeline store.
STORE_COLUMNS = [
    "kind",
    "name",
    "start_ns",
    "dur_ns",
    "correlation",
    "stream",
    "bytes",
    "memcpy_kind",
    "collective",
    "dtype",
    "in_nelems",
    "out_nelems",
    "group_size",
]
STEP_COLUMNS = [
    "step",
    "inferred",
    "start_ns",
    "dur_ns",
    "gap_ns",
    "compute_ns",
    "tail_ns",
    "compute_busy_ns",
    "comm_ns",
]
COLLECTIVE_COLUMNS = [
    "collective",
    "group_size",
    "count",
    "total_ns",
    "min_ns",
    "max_ns",
    "sized_count",
    "sized_ns",
    "bytes",
]

# Slow-rank rule: a robust z-score (Iglewicz and Hoaglin) over the ranks' values.
ROBUST_Z_THRESHOLD = 3.5
# When over half the ranks have the same value (MAD = 0), a rank this many times the median.
MAD_ZERO_RATIO = 1.2
# Never flag a rank less than this fraction above the median (nanosecond jitter gives tiny MADs).
MIN_EXCESS = 0.05

# Bus bandwidth factors of nccl-tests (doc/PERFORMANCE.md), by collective, for n ranks.
_BUS_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
    "send": lambda n: 1.0,
    "recv": lambda n: 1.0,
}

_DTYPE_BYTES = {
    "double": 8,
    "long": 8,
    "complexfloat": 8,
    "complexdouble": 16,
    "float": 4,
    "int": 4,
    "half": 2,
    "bfloat16": 2,
    "short": 2,
    "byte": 1,
    "char": 1,
    "bool": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}
_KERNEL_COLLECTIVE_RE = re.compile(r"^(?:nccl|rccl)(?:Dev)?Kernel_([A-Za-z]+)")
_KERNEL_WORDS = {
    "allreduce": "all_reduce",
    "allgather": "all_gather",
    "reducescatter": "reduce_scatter",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "sendrecv": "send_recv",
    "send": "send",
    "recv": "recv",
    "alltoall": "all_to_all",
}


@dataclass(frozen=True)
class RankFrames:
    """What the cluster page keeps of one part."""

    steps: pd.DataFrame  # STEP_COLUMNS
    collectives: pd.DataFrame  # COLLECTIVE_COLUMNS
    comm_ns: int  # union of communication kernel time
    overlap_ns: int  # of which computation ran at the same time


def canonical_collective(name: str) -> str:
    """ "allreduce", "_allgather_base", "ncclDevKernel_AllGather_RING…" → "all_reduce"…"""
    found = _KERNEL_COLLECTIVE_RE.match(name)
    word = found.group(1) if found else name
    key = re.sub(r"[^a-z]", "", word.lower())
    for suffix in ("coalesced", "intotensor", "tensor", "base"):
        key = key.removesuffix(suffix)
    return _KERNEL_WORDS.get(key, key or "unknown")


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of a PyTorch scalar type name ("Float", "BFloat16"); 0 if unknown."""
    return _DTYPE_BYTES.get(dtype.lower(), 0)


def bus_factor(collective: str, ranks: int) -> float | None:
    """algbw → busbw factor of nccl-tests; None when the rank count or collective is unknown."""
    factor = _BUS_FACTORS.get(collective)
    return None if factor is None or ranks <= 0 else float(factor(ranks))


def rank_frames(trace: RankTrace, steps: pd.DataFrame) -> RankFrames:
    """Step breakdown, collectives and overlap of one rank; ``steps`` has step, start_ns, dur_ns
    (the ingest's step frame) and may be empty."""
    ops = trace.gpu_ops
    overlap = comm_comp_overlap([trace])
    comm_ns = int(overlap["comm_ns"].sum())
    overlap_ns = int(overlap["overlap_ns"].sum())
    return RankFrames(
        steps=step_breakdown(ops, steps),
        collectives=collectives(trace, ops),
        comm_ns=comm_ns,
        overlap_ns=overlap_ns,
    )


def step_breakdown(ops: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Gap, compute and tail of each step (see the module docstring); ``ops`` is
    ``RankTrace.gpu_ops`` (sorted by start, with ``type`` and ``end_ns``)."""
    windows = steps.sort_values(["start_ns", "step"]).drop_duplicates("step")
    inferred = windows.empty
    if inferred:
        if ops.empty:
            return pd.DataFrame({c: np.empty(0, np.int64) for c in STEP_COLUMNS})
        first, last = int(ops["start_ns"].iloc[0]), int(ops["end_ns"].max())
        windows = pd.DataFrame({"step": [0], "start_ns": [first], "dur_ns": [last - first]})
    start = windows["start_ns"].to_numpy(np.int64)
    dur = windows["dur_ns"].to_numpy(np.int64)
    end = start + dur
    comp = ops[ops["type"] == COMP]
    comp_start, comp_end = comp["start_ns"].to_numpy(np.int64), comp["end_ns"].to_numpy(np.int64)
    lo, hi = np.searchsorted(comp_start, start), np.searchsorted(comp_start, end)
    has = hi > lo
    first_start = end.copy()
    first_start[has] = comp_start[lo[has]]
    last_end = _range_reduce(np.maximum, comp_end, lo, hi, start)
    gap = np.clip(first_start - start, 0, dur)
    compute = np.clip(np.minimum(last_end, end) - (start + gap), 0, None)
    compute = np.where(has, compute, 0)
    comm = ops[ops["type"] == COMM]
    comm_lo = np.searchsorted(comm["start_ns"].to_numpy(np.int64), start)
    comm_hi = np.searchsorted(comm["start_ns"].to_numpy(np.int64), end)
    return pd.DataFrame(
        {
            "step": windows["step"].to_numpy(np.int64),
            "inferred": inferred,
            "start_ns": start,
            "dur_ns": dur,
            "gap_ns": gap,
            "compute_ns": compute,
            "tail_ns": dur - gap - compute,
            "compute_busy_ns": _range_sum(comp["dur_ns"].to_numpy(np.int64), lo, hi),
            "comm_ns": _range_sum(comm["dur_ns"].to_numpy(np.int64), comm_lo, comm_hi),
        }
    )


def _range_sum(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    cumulative = np.r_[0, np.cumsum(values)]
    return cumulative[hi] - cumulative[lo]


def _range_reduce(
    ufunc: np.ufunc, values: np.ndarray, lo: np.ndarray, hi: np.ndarray, empty: np.ndarray
) -> np.ndarray:
    """ufunc over values[lo:hi] per row; ``empty`` where the range is empty."""
    out = empty.copy()
    nonempty = np.flatnonzero(hi > lo)
    for row in nonempty:  # one call per step, not per event
        out[row] = ufunc.reduce(values[lo[row] : hi[row]])
    return out


def collectives(trace: RankTrace, ops: pd.DataFrame) -> pd.DataFrame:
    """Per collective and group size: count, time, and the bytes of the calls whose message size
    the trace records (``In/Out msg nelems`` × dtype size, the larger of the two, as nccl-tests
    counts all-gather and reduce-scatter)."""
    comm = ops[ops["type"] == COMM]
    if comm.empty:
        return _empty_per_collective(COLLECTIVE_COLUMNS)
    meta = trace.events.loc[comm.index, ["dtype", "in_nelems", "out_nelems", "group_size"]]
    names = trace.names
    dtype_id = meta["dtype"].to_numpy()
    unique_d, inverse_d = np.unique(dtype_id, return_inverse=True)
    sizes = np.array([dtype_bytes(str(names[i])) if i >= 0 else 0 for i in unique_d], np.int64)
    nelems = np.maximum(meta["in_nelems"].to_numpy(np.int64), meta["out_nelems"].to_numpy(np.int64))
    nbytes = nelems * sizes[inverse_d.reshape(-1)]
    sized = nbytes > 0
    dur = comm["dur_ns"].to_numpy(np.int64)
    frame = pd.DataFrame(
        {
            "collective": _collective_labels(trace, comm),
            "group_size": meta["group_size"].to_numpy(np.int64),
            "dur": dur,
            "sized": sized.astype(np.int64),
            "sized_ns": np.where(sized, dur, 0),
            "bytes": np.where(sized, nbytes, 0),
        }
    )
    grouped = frame.groupby(["collective", "group_size"], sort=True).agg(
        count=("dur", "size"),
        total_ns=("dur", "sum"),
        min_ns=("dur", "min"),
        max_ns=("dur", "max"),
        sized_count=("sized", "sum"),
        sized_ns=("sized_ns", "sum"),
        bytes=("bytes", "sum"),
    )
    return grouped.reset_index()[COLLECTIVE_COLUMNS]


def _empty_per_collective(columns: list[str]) -> pd.DataFrame:
    """A table with no rows: the collective's name as text, every other column integers."""
    return pd.DataFrame(
        {c: pd.Series(dtype=object if c == "collective" else np.int64) for c in columns}
    )


def _collective_labels(trace: RankTrace, comm: pd.DataFrame) -> np.ndarray:
    """The canonical collective of each communication op: from the trace's collective metadata
    when recorded, else from the kernel name."""
    coll_id = trace.events.loc[comm.index, "collective"].to_numpy()
    label_id = np.where(coll_id >= 0, coll_id, comm["name"].to_numpy())
    unique, inverse = np.unique(label_id, return_inverse=True)
    labels = np.array([canonical_collective(str(trace.names[i])) for i in unique], dtype=object)
    return labels[inverse.reshape(-1)]


_WAIT_COLUMNS = ["rank", "collective", "calls", "wait_ns", "max_wait_ns"]


def collective_waits(traces: Iterable[RankTrace]) -> pd.DataFrame:
    """Per rank and collective: the calls matched across ranks and the time the rank's kernels
    waited in them for the last rank to arrive.

    A collective completes only when every member has joined, and each communicator runs its
    calls in the same order on every rank, so the i-th call of a collective on one rank is the
    i-th on the others. A rank's kernel spins from its own start until the last rank starts the
    call, so its wait is the latest start of that call over the ranks minus its own start, and
    never more than its own kernel's duration (clocks aligned at ingest; a larger difference is
    skew or a rank busy elsewhere, not time spent in the kernel). Derivable only where every rank
    made the same number of calls of the collective; other collectives (and single-rank jobs) are
    left out.

    Columns: rank, collective, calls, wait_ns, max_wait_ns.
    """
    return match_collective_calls([(trace.rank, collective_calls(trace)) for trace in traces])


def collective_calls(trace: RankTrace, rows: np.ndarray | None = None) -> pd.DataFrame:
    """The rank's communication kernels (of its events where ``rows`` is true, when given),
    numbered per collective in start order: rank, collective, start_ns, dur_ns, call (what
    ``match_collective_calls`` matches across ranks; a few rows per step, so a job's ranks can
    be read one at a time)."""
    ops = trace.gpu_ops
    if rows is not None:
        ops = ops[rows[trace.gpu_op_rows]]
    comm = ops[ops["type"] == COMM]
    frame = pd.DataFrame(
        {
            "rank": np.full(len(comm), trace.rank, np.int64),
            "collective": _collective_labels(trace, comm) if len(comm) else np.array([], object),
            "start_ns": comm["start_ns"].to_numpy(np.int64),
            "dur_ns": comm["dur_ns"].to_numpy(np.int64),
        }
    ).sort_values(["collective", "start_ns"], kind="stable")
    frame["call"] = frame.groupby("collective").cumcount()
    return frame


def match_collective_calls(per_rank_calls: list[tuple[int, pd.DataFrame]]) -> pd.DataFrame:
    """``collective_waits`` from every rank's ``collective_calls`` ((rank, calls) per rank)."""
    ranks = {rank for rank, _ in per_rank_calls}
    found = [frame for _, frame in per_rank_calls if len(frame)]
    if len(ranks) < 2 or not found:
        return _empty_per_collective(_WAIT_COLUMNS)
    calls = pd.concat(found, ignore_index=True)
    per_rank = calls.groupby(["collective", "rank"]).size().unstack("rank")
    matched = per_rank.index[
        per_rank.notna().all(axis=1)
        & (len(per_rank.columns) == len(ranks))
        & (per_rank.nunique(axis=1) == 1)
    ]
    calls = calls[calls["collective"].isin(matched)]
    latest = calls.groupby(["collective", "call"])["start_ns"].transform("max")
    calls = calls.assign(wait_ns=np.minimum(latest - calls["start_ns"], calls["dur_ns"]))
    table = calls.groupby(["rank", "collective"], sort=True).agg(
        calls=("wait_ns", "size"), wait_ns=("wait_ns", "sum"), max_wait_ns=("wait_ns", "max")
    )
    return table.reset_index()[_WAIT_COLUMNS]


def collective_calls_by_window(trace: RankTrace) -> dict[str, pd.DataFrame]:
    """The rank's ``collective_calls`` in each window (``traces.window``), over the steps Kineto
    recorded (``captured_only``): the whole trace, and the complete steps, where the rank keeps
    the calls launched before its last profiler step."""
    return calls_in_windows(captured_only(trace))


def calls_in_windows(captured: RankTrace) -> dict[str, pd.DataFrame]:
    """``collective_calls_by_window`` of a rank already ``captured_only`` (its complete steps:
    the event model's ``in_complete_steps``)."""
    return {
        WHOLE_TRACE: collective_calls(captured),
        COMPLETE_STEPS: collective_calls(captured, captured.events["in_complete_steps"].to_numpy()),
    }


def collective_waits_by_window(traces: Iterable[RankTrace]) -> dict[str, pd.DataFrame]:
    """``collective_waits`` in each window, the calls matched among those each rank keeps
    there (a collective one rank's cut leaves a call fewer of is then not derivable)."""
    return match_calls_by_window(
        [(trace.rank, collective_calls_by_window(trace)) for trace in traces]
    )


def match_calls_by_window(
    per_rank_calls: list[tuple[int, dict[str, pd.DataFrame]]],
) -> dict[str, pd.DataFrame]:
    """``collective_waits_by_window`` from every rank's ``collective_calls_by_window``."""
    return {
        window: match_collective_calls(
            [(rank, by_window[window]) for rank, by_window in per_rank_calls]
        )
        for window in (WHOLE_TRACE, COMPLETE_STEPS)
    }


@dataclass(frozen=True)
class Outliers:
    median: float
    mad: float
    robust_z: np.ndarray
    flagged: np.ndarray  # bool per value


def slow_outliers(
    values: np.ndarray,
    threshold: float = ROBUST_Z_THRESHOLD,
    mad_zero_ratio: float = MAD_ZERO_RATIO,
    min_excess: float = MIN_EXCESS,
) -> Outliers:
    """Values that are slow outliers among their peers (ranks or nodes).

    Robust z = 0.6745·(x − median)/MAD; flagged when z > ``threshold``, or, when MAD is 0,
    when x > ``mad_zero_ratio`` × median; and in both cases x > (1 + ``min_excess``) × median.
    Fewer than three values are never flagged (no majority to compare with).
    """
    x = np.asarray(values, dtype=np.float64)
    if len(x) == 0:
        return Outliers(float("nan"), float("nan"), x, np.zeros(0, bool))
    median = float(np.median(x))
    mad = float(np.median(np.abs(x - median)))
    z = 0.6745 * (x - median) / mad if mad > 0 else np.zeros(len(x))
    by_rule = z > threshold if mad > 0 else x > mad_zero_ratio * median
    flagged = by_rule & (x > (1 + min_excess) * median) & (len(x) >= 3)
    return Outliers(median, mad, z, flagged)


def sync_wait(per_step: pd.DataFrame) -> pd.Series:
    """Per row (rank, step): how long the rank waited at the step's collectives for the slowest
    rank, estimated as the latest (gap + compute) of the step over all ranks minus its own (ranks
    start a synchronised step together). Indexed like ``per_step``."""
    ready = per_step["gap_ns"] + per_step["compute_ns"]
    return ready.groupby(per_step["step"]).transform("max") - ready


def diff(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``name, count, total_ns`` in job A and job B, joined by name: ``status`` is
    added (only in B), removed (only in A) or changed; sorted by |B − A time|, largest first."""
    joined = pd.merge(
        a[["name", "count", "total_ns"]],
        b[["name", "count", "total_ns"]],
        on="name",
        how="outer",
        suffixes=("_a", "_b"),
    )
    in_a, in_b = joined["count_a"].notna(), joined["count_b"].notna()
    for column in ("count_a", "count_b", "total_ns_a", "total_ns_b"):
        joined[column] = joined[column].fillna(0).astype(np.int64)
    joined["delta_ns"] = joined["total_ns_b"] - joined["total_ns_a"]
    joined["delta_count"] = joined["count_b"] - joined["count_a"]
    joined["status"] = np.select([~in_a, ~in_b], ["added", "removed"], "changed")
    order = np.lexsort((joined["name"].to_numpy(), -joined["delta_ns"].abs().to_numpy()))
    return joined.iloc[order].reset_index(drop=True)


@dataclass(frozen=True)
class ClusterFrames:
    """A part's cluster frames over the whole trace and, when it has one, its complete steps
    (whose step rows are the whole trace's before the cut, so only ``whole.steps`` is kept)."""

    whole: RankFrames
    complete_steps: RankFrames | None


def frames_from_store(
    store_dir: str | Path, rank: int, steps: pd.DataFrame, cut: StepCut | None = None
) -> ClusterFrames:
    """``rank_frames`` of a part's timeline store (``traces.ingest_trace``'s output), over
    each window."""
    reader = TimelineReader(store_dir)
    # Arrow's columns are freed as they are converted (a part's GPU work is millions of rows).
    columns = [*STORE_COLUMNS, "in_complete_steps"]
    events = reader.read_kinds(sorted(GPU_OP_KINDS), columns).to_pandas(self_destruct=True)
    if "captured" in steps:  # a collector part: its GPU work is known in the captured steps
        steps = steps[steps["captured"].to_numpy(dtype=bool)]
    whole = rank_frames(RankTrace(rank, events, reader.strings), steps)
    if cut is None:
        return ClusterFrames(whole, None)
    kept = events["in_complete_steps"].to_numpy()
    in_steps = steps[cut.before(steps["start_ns"].to_numpy())] if len(steps) else steps
    windowed = RankTrace(rank, rows_where(events, kept), reader.strings)
    return ClusterFrames(whole, rank_frames(windowed, in_steps))
