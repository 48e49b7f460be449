"""Counters over time: memory-copy bandwidth and the queue length of each CUDA stream.

Both are step functions given at the instants their value changes; a value holds until the
next point. The summaries describe those points (as Holistic Trace Analysis does); the
bandwidth summary leaves out the points where no copy runs.
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
from profiler_app.traces.arrays import run_starts
from tracefmt.kinds import LAUNCH_KINDS, MEMCPY_KIND_NAMES, EventKind, of_kinds
from tracefmt.launches import HTA_ENQUEUE_CALLS

# A stream's launch queue holds this many operations; the CPU blocks when it is full.
MAX_QUEUE_LENGTH = 1024


def _memory_label(name: str) -> str:
    if name.startswith("Memset"):
        return "Memset"
    # "Memcpy HtoD (Host -> Device)" -> "Memcpy HtoD"
    return name[:11] if name.startswith("Memcpy ") else "Memcpy Unknown"


def _memory_kind(trace: RankTrace, ops: pd.DataFrame) -> np.ndarray:
    """The kind of each memory op: "Memcpy HtoD", "Memcpy DtoH", ... or "Memset"."""
    unique, inverse = np.unique(ops["name"].to_numpy(), return_inverse=True)
    labels = np.array([_memory_label(str(trace.names[i])) for i in unique], dtype=object)
    label = labels[inverse.reshape(-1)]
    # The name says nothing: fall back on the direction the trace recorded (ROCm does).
    code = ops["memcpy_kind"].to_numpy()
    stated = np.array(
        ["Memcpy " + MEMCPY_KIND_NAMES.get(int(c), "Unknown") for c in range(256)], dtype=object
    )[code]
    return np.where((label == "Memcpy Unknown") & (code > 0), stated, label)


def _copy_bytes(trace: RankTrace, ops: pd.DataFrame) -> np.ndarray:
    """Each op's bytes; where the op states none, those of the runtime call that enqueued it
    (ROCm writes a copy's size only on its ``hipMemcpy*`` call). Stores written since the
    ingest sized every copy when it finished the store (``timeline_store``); this lookup keeps
    the figures of stores written before, whose copies were sized within a slice of the file
    only."""
    nbytes = ops["bytes"].to_numpy().copy()
    events = trace.events
    sized = of_kinds(events["kind"].to_numpy(), LAUNCH_KINDS) & (events["bytes"].to_numpy() >= 0)
    correlation = ops["correlation"].to_numpy()
    missing = np.flatnonzero((nbytes < 0) & (correlation >= 0))
    if not len(missing) or not sized.any():
        return nbytes
    call_correlation = events["correlation"].to_numpy()[sized]
    call_bytes = events["bytes"].to_numpy()[sized]
    order = np.argsort(call_correlation, kind="stable")
    ids = call_correlation[order]
    at = np.minimum(np.searchsorted(ids, correlation[missing]), len(ids) - 1)
    found = ids[at] == correlation[missing]
    nbytes[missing[found]] = call_bytes[order[at[found]]]
    return nbytes


def memory_bandwidth_series(traces: Iterable[RankTrace]) -> pd.DataFrame:
    """rank, kind, time_ns, bandwidth_gbps: total bandwidth of the copies of each kind running.

    A copy's bandwidth is the one Kineto recorded (from the ns-precise duration), else its
    bytes over its stored duration (bytes per ns = GB/s); traces in whole µs round short
    copies' durations by up to half a µs.
    """
    frames = []
    for trace in traces:
        ops, rows = trace.gpu_ops, trace.gpu_op_rows
        memory = of_kinds(ops["kind"].to_numpy(), (EventKind.GPU_MEMCPY, EventKind.GPU_MEMSET))
        ops, rows = ops[memory], rows[memory]
        ops = ops.assign(bytes=_copy_bytes(trace, ops))
        sized = ops["bytes"].to_numpy() >= 0
        ops, rows = ops[sized], rows[sized]
        if len(ops) == 0:
            continue
        dur = np.maximum(ops["dur_ns"].to_numpy(), 1)
        recorded = trace.events["bandwidth_gbps"].to_numpy()[rows]
        rate = np.where(np.isnan(recorded), ops["bytes"].to_numpy() / dur, recorded)
        kind = _memory_kind(trace, ops)
        start = ops["start_ns"].to_numpy()
        points = pd.DataFrame(
            {
                "kind": np.concatenate((kind, kind)),
                "time_ns": np.concatenate((start, start + dur)),
                "delta": np.concatenate((rate, -rate)),
                "running": np.concatenate((np.ones(len(ops)), -np.ones(len(ops)))),
            }
        ).sort_values(["kind", "time_ns"], kind="stable")
        grouped = points.groupby("kind", sort=False)
        # Exactly zero when nothing runs, however the floating-point sum rounded.
        level = grouped["delta"].cumsum().where(grouped["running"].cumsum() > 0, 0.0)
        frames.append(
            pd.DataFrame(
                {
                    "rank": trace.rank,
                    "kind": points["kind"],
                    "time_ns": points["time_ns"],
                    "bandwidth_gbps": level,
                }
            )
        )
    if not frames:
        return pd.DataFrame(columns=["rank", "kind", "time_ns", "bandwidth_gbps"])
    return pd.concat(frames, ignore_index=True)


def memory_bandwidth_summary(series: pd.DataFrame) -> pd.DataFrame:
    """count, mean, std, min, p25, p50, p75, max of the bandwidth while copies run."""
    running = series[series["bandwidth_gbps"] > 0]
    return grouped_describe(running, ["rank", "kind"], "bandwidth_gbps")


def queue_length_series(traces: Iterable[RankTrace]) -> pd.DataFrame:
    """rank, stream, time_ns, queue_length: operations enqueued on the stream and not started.

    The length grows when the host makes an enqueue call and shrinks when the GPU op with the
    same correlation id starts. The calls are HTA's (``tracefmt.launches.HTA_ENQUEUE_CALLS``):
    a CUDA graph launch enqueues many kernels under one id, so one sample each would not count
    them.
    """
    frames = []
    for trace in traces:
        pairs = trace.launch_pairs
        enqueued = trace.named(pairs["call_name"], HTA_ENQUEUE_CALLS)
        if not enqueued.all():
            pairs = {column: values[enqueued] for column, values in pairs.items()}
        if len(pairs["correlation"]) == 0:
            continue
        n = len(pairs["correlation"])
        stream = np.concatenate((pairs["stream"], pairs["stream"]))
        time_ns = np.concatenate((pairs["call_start_ns"], pairs["op_start_ns"]))
        order = np.lexsort((time_ns, stream))  # stable: an enqueue before a start at one instant
        stream, time_ns = stream[order], time_ns[order]
        total = np.cumsum(np.where(order < n, 1, -1))
        # Restart the count at each stream: subtract what the streams before it left.
        first = run_starts(stream)
        before = np.r_[0, total[first[1:] - 1]]
        length = total - np.repeat(before, np.diff(np.r_[first, len(stream)]))
        rank = np.full(len(stream), trace.rank, dtype=np.int64)
        points = {"rank": rank, "stream": stream, "time_ns": time_ns, "queue_length": length}
        frames.append(pd.DataFrame(points, copy=False))
    if not frames:
        return pd.DataFrame(columns=["rank", "stream", "time_ns", "queue_length"])
    return pd.concat(frames, ignore_index=True)


def queue_length_summary(series: pd.DataFrame) -> pd.DataFrame:
    """Per rank and stream: describe() of the queue length, and the time the queue was full
    (at MAX_QUEUE_LENGTH, when the host blocks on the next enqueue)."""
    keys = ["rank", "stream"]
    if not len(series):
        empty = np.zeros(0, dtype=np.int64)
        return grouped_describe(series, keys, "queue_length").assign(full_queue_ns=empty)
    group, labels = group_numbers(series, keys)  # each point's row of the table
    stats = describe_groups(group, labels, series["queue_length"].to_numpy(np.float64))
    time_ns, length = series["time_ns"].to_numpy(), series["queue_length"].to_numpy()
    # The series is ordered by rank, stream and time: a value holds until the next point.
    same = group[1:] == group[:-1]
    held = np.where(same & (length[:-1] >= MAX_QUEUE_LENGTH), np.diff(time_ns), 0)
    full = np.zeros(len(stats), dtype=np.int64)
    np.add.at(full, group[:-1], held)
    stats["full_queue_ns"] = full
    return stats
