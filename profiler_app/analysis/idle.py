"""Why each CUDA stream sits idle: host wait, kernel wait or other.

The gap before each GPU op on a stream (since all earlier ops there ended; 0 when the op
starts while one still runs, so idle time is never negative) is
- host wait when the op's launch on the CPU started after the earlier ops had ended: the CPU
  did not enqueue work fast enough;
- kernel wait when it is not host wait and shorter than ``consecutive_kernel_delay_ns``: the
  overhead between back-to-back kernels (CUDA graphs remove it);
- other otherwise (e.g. waiting on an event from another stream).

Holistic Trace Analysis's default delay is "30"; it compares it with microsecond timestamps,
so it is 30 µs (not the 30 ns its docstring says).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from profiler_app.analysis.events import (
    RankTrace,
    describe_groups,
    group_numbers,
    grouped_describe,
)
from tracefmt.kinds import EventKind

HOST_WAIT, KERNEL_WAIT, OTHER_WAIT = "host_wait", "kernel_wait", "other"
IDLE_CATEGORIES = (HOST_WAIT, KERNEL_WAIT, OTHER_WAIT)
CONSECUTIVE_KERNEL_DELAY_NS = 30_000


def launch_starts(trace: RankTrace, ops: np.ndarray) -> np.ndarray:
    """Start of the host call that launched each GPU op (``ops``: index labels of ``events``;
    the event model's ``launch``); -1 where the trace holds none."""
    events = trace.events
    call = trace.positions(events["launch"].to_numpy()[trace.positions(ops)])
    return np.where(call >= 0, events["start_ns"].to_numpy()[np.maximum(call, 0)], -1)


def idle_intervals(
    trace: RankTrace, consecutive_kernel_delay_ns: int = CONSECUTIVE_KERNEL_DELAY_NS
) -> pd.DataFrame:
    """One row per gap between consecutive GPU ops of a stream: stream, start_ns, idle_ns,
    category."""
    ops = trace.gpu_ops
    # HTA's idle breakdown reads kernels, copies and sets only: a stream waiting on an event is
    # idle, the wait being why (hta/analyzers/breakdown_analysis.py, its ``kernel_cats``).
    waits = ops["kind"].to_numpy() == EventKind.CUDA_SYNC
    if waits.any():
        ops = ops[~waits]
    order = np.lexsort((ops["start_ns"].to_numpy(), ops["stream"].to_numpy()))
    stream = ops["stream"].to_numpy()[order]
    start = ops["start_ns"].to_numpy()[order]
    end = ops["end_ns"].to_numpy()[order]
    launched = launch_starts(trace, ops.index.to_numpy()[order])
    follows = np.zeros(len(order), dtype=bool)
    follows[1:] = stream[1:] == stream[:-1]
    # Between two ranges Kineto recorded (a collector job) the stream was not watched.
    window = trace.window_of(start)
    follows[1:] &= window[1:] == window[:-1]
    # Ops of one stream can overlap (parts merged into a rank, several devices' streams with one
    # id): the stream is busy until the latest end so far, not the previous op's end.
    reach = pd.Series(end).groupby(stream, sort=False).cummax().to_numpy()
    prev_end = np.roll(reach, 1)
    idle = np.maximum(start - prev_end, 0)
    host = (launched >= 0) & (launched > prev_end)
    kernel = ~host & (idle < consecutive_kernel_delay_ns)
    category = np.where(host, 0, np.where(kernel, 1, 2)).astype(np.int8)  # IDLE_CATEGORIES
    return pd.DataFrame(
        {
            "stream": stream[follows],
            "start_ns": prev_end[follows],
            "idle_ns": idle[follows],
            "category": pd.Categorical.from_codes(category[follows], categories=IDLE_CATEGORIES),
        }
    )


def idle_time_breakdown(
    traces: Iterable[RankTrace], consecutive_kernel_delay_ns: int = CONSECUTIVE_KERNEL_DELAY_NS
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(breakdown, interval statistics) per rank, stream and category.

    breakdown: rank, stream, category, idle_ns, idle_ratio (of the stream's idle time);
    statistics: rank, stream, category, count, mean, std, min, p25, p50, p75, max (ns).
    """
    gaps = pd.concat(
        [idle_intervals(t, consecutive_kernel_delay_ns).assign(rank=t.rank) for t in traces]
        or [pd.DataFrame(columns=["rank", "stream", "start_ns", "idle_ns", "category"])],
        ignore_index=True,
    )
    keys = ["rank", "stream", "category"]
    if gaps.empty:
        return pd.DataFrame(columns=[*keys, "idle_ns", "idle_ratio"]), grouped_describe(
            gaps, keys, "idle_ns"
        )
    idle_ns = gaps["idle_ns"].to_numpy()
    stats = describe_groups(*group_numbers(gaps, keys), idle_ns.astype(np.float64))
    # Every category of each stream, 0 where it has no gap of that kind.
    stream, streams = group_numbers(gaps, ["rank", "stream"])
    sums = np.zeros((len(streams), len(IDLE_CATEGORIES)), dtype=np.int64)
    np.add.at(sums, (stream, gaps["category"].cat.codes.to_numpy()), idle_ns)
    per_stream = pd.Series(np.repeat(sums.sum(axis=1), len(IDLE_CATEGORIES)))
    totals = pd.DataFrame(
        {
            "rank": np.repeat(streams["rank"].to_numpy(), len(IDLE_CATEGORIES)),
            "stream": np.repeat(streams["stream"].to_numpy(), len(IDLE_CATEGORIES)),
            "category": np.tile(IDLE_CATEGORIES, len(streams)),
            "idle_ns": sums.ravel(),
        }
    )
    totals["idle_ratio"] = totals["idle_ns"] / per_stream.where(per_stream != 0)
    return totals, stats
