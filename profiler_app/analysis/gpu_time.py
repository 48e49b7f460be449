"""Where GPU time goes: temporal breakdown, kernel breakdown and comm–comp overlap per rank.

All three read ``RankTrace.state_ns``: how long each set of kernel types ran together.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from profiler_app.analysis.events import (
    COMM,
    COMP,
    MEM,
    N_STATES,
    TYPE_BITS,
    RankTrace,
)

# HTA's kernel breakdown looks at these types only (OTHER is left out of it).
BREAKDOWN_TYPES = (COMP, COMM, MEM)


def _with_bits(durations: np.ndarray, *types: str) -> float:
    """Time during which every type in ``types`` runs."""
    mask = sum(TYPE_BITS[t] for t in types)
    states = np.arange(N_STATES)
    return float(durations[(states & mask) == mask].sum())


def temporal_breakdown(traces: Iterable[RankTrace]) -> pd.DataFrame:
    """Per rank: idle, compute and non-compute (communication, memory) time of the GPU.

    The span runs from the first GPU op's start to the last one's end; idle is the part of it
    with no GPU op running, compute the part with a computation kernel running, non-compute
    the rest.
    """
    rows = []
    for trace in traces:
        ops = trace.gpu_ops
        if len(ops) == 0:
            continue
        durations = trace.state_ns
        span = _span_ns(trace, ops)
        idle = span - float(durations[1:].sum())
        compute = _with_bits(durations, COMP)
        rows.append(
            {
                "rank": trace.rank,
                "idle_ns": idle,
                "compute_ns": compute,
                "non_compute_ns": span - compute - idle,
                "span_ns": span,
            }
        )
    frame = pd.DataFrame(
        rows, columns=["rank", "idle_ns", "compute_ns", "non_compute_ns", "span_ns"]
    )
    for part in ("idle", "compute", "non_compute"):
        frame[f"{part}_pct"] = 100.0 * frame[f"{part}_ns"] / frame["span_ns"]
    return frame


def _span_ns(trace: RankTrace, ops: pd.DataFrame) -> int:
    """From the first GPU op's start to the last one's end; in a collector job, that within
    each range Kineto recorded, summed (the time between them was not recorded)."""
    start, end = ops["start_ns"].to_numpy(), ops["end_ns"].to_numpy()
    if trace.windows is None:  # one recording
        return int(end.max() - start.min())
    window = trace.window_of(start)
    inside = window >= 0
    if not inside.any():
        return 0
    frame = pd.DataFrame({"window": window[inside], "start": start[inside], "end": end[inside]})
    spans = frame.groupby("window").agg(start=("start", "min"), end=("end", "max"))
    return int((spans["end"] - spans["start"]).sum())


def kernel_type_breakdown(traces: Iterable[RankTrace]) -> pd.DataFrame:
    """Per rank: time with only COMP, only COMM, only MEM, or several of them running.

    ``kernel_type`` is a type or types joined by "+" ("COMP+COMM" = overlapping);
    ``pct`` is the share of the rank's total over these rows.
    """
    rows = []
    for trace in traces:
        if len(trace.gpu_ops) == 0:
            continue
        durations = trace.state_ns
        mask = sum(TYPE_BITS[t] for t in BREAKDOWN_TYPES)
        per_state = np.bincount(np.arange(N_STATES) & mask, weights=durations, minlength=N_STATES)
        for state in np.flatnonzero(per_state[1:]) + 1:
            label = "+".join(t for t in BREAKDOWN_TYPES if state & TYPE_BITS[t])
            rows.append({"rank": trace.rank, "kernel_type": label, "time_ns": per_state[state]})
    frame = pd.DataFrame(rows, columns=["rank", "kernel_type", "time_ns"])
    frame["pct"] = 100.0 * frame["time_ns"] / frame.groupby("rank")["time_ns"].transform("sum")
    return frame


def kernel_stats(traces: Iterable[RankTrace]) -> pd.DataFrame:
    """Per rank and GPU op name: type, count, sum, min, max, mean and std of the durations.

    ``std_ns`` is the kernel std of docs/glossary.md: the sample standard deviation (n − 1, 0
    for a single run), as ``figures.duration_std_ns`` gives it from sums; ``share_of_type_pct`` is
    the op's part of its type's total on that rank, for "top kernels per type".
    """
    frames = []
    for trace in traces:
        ops = trace.gpu_ops
        if len(ops) == 0:
            continue
        stats = ops.groupby("name", sort=False)["dur_ns"].agg(
            ["count", "sum", "min", "max", "mean", "std"]
        )
        stats["std"] = stats["std"].fillna(0.0)
        kind = ops.groupby("name", sort=False, observed=True)["type"].first().astype(str)
        stats = stats.join(kind).reset_index()
        stats["name"] = trace.names[stats["name"].to_numpy()]
        stats.insert(0, "rank", trace.rank)
        frames.append(stats)
    columns = {
        "sum": "sum_ns",
        "min": "min_ns",
        "max": "max_ns",
        "mean": "mean_ns",
        "std": "std_ns",
    }
    if not frames:
        return pd.DataFrame(columns=["rank", "name", "count", *columns.values(), "type"])
    frame = pd.concat(frames, ignore_index=True).rename(columns=columns)
    type_total = frame.groupby(["rank", "type"])["sum_ns"].transform("sum")
    frame["share_of_type_pct"] = 100.0 * frame["sum_ns"] / type_total
    return frame.sort_values(
        ["rank", "type", "sum_ns"], ascending=[True, True, False], ignore_index=True
    )


NUM_KERNELS = 10
DURATION_RATIO = 0.8
OTHERS = "others"


def top_kernels(
    kernels: pd.DataFrame, num_kernels: int = NUM_KERNELS, duration_ratio: float = DURATION_RATIO
) -> pd.DataFrame:
    """HTA's kernel breakdown table: per rank and type, at most ``num_kernels`` kernels by total
    time, and only those whose running total (largest first) is at most the ``duration_ratio``
    quantile of the running totals; the rest are one row named "others".

    ``kernels`` is ``kernel_stats``'s table. Rows keep its columns and add ``kernels`` (how many
    names the row holds); the "others" row's statistics are over all its kernels' runs.
    """
    parts = []
    for _, group in kernels.groupby(["rank", "type"], sort=True):
        group = group.sort_values("sum_ns", ascending=False, kind="stable")
        if len(group) <= num_kernels:
            parts.append(group.assign(kernels=1))
            continue
        running = group["sum_ns"].cumsum()
        grouped = (running > running.quantile(duration_ratio)).to_numpy(copy=True)
        grouped[num_kernels:] = True
        parts += [group[~grouped].assign(kernels=1), _others(group[grouped])]
    columns = [*kernels.columns, "kernels"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def _others(group: pd.DataFrame) -> pd.DataFrame:
    """One row for several kernels: their runs' count, sum, min, max, mean and sample std."""
    count, mean = group["count"].to_numpy(), group["mean_ns"].to_numpy()
    n, total = int(count.sum()), float(group["sum_ns"].sum())
    overall = total / n
    # Pooled: each kernel's squared deviations plus its runs' offset from the overall mean.
    squares = ((count - 1) * group["std_ns"].to_numpy() ** 2 + count * (mean - overall) ** 2).sum()
    row = {
        "rank": group["rank"].iloc[0],
        "name": OTHERS,
        "count": n,
        "sum_ns": total,
        "min_ns": group["min_ns"].min(),
        "max_ns": group["max_ns"].max(),
        "mean_ns": overall,
        "std_ns": float(np.sqrt(squares / (n - 1))) if n > 1 else 0.0,
        "type": group["type"].iloc[0],
        "share_of_type_pct": group["share_of_type_pct"].sum(),
        "kernels": len(group),
    }
    return pd.DataFrame([row])


def comm_comp_overlap(traces: Iterable[RankTrace]) -> pd.DataFrame:
    """Per rank: the share of communication time during which computation also runs.

    ``overlap_pct`` is NaN for a rank without communication kernels.
    """
    rows = []
    for trace in traces:
        if len(trace.gpu_ops) == 0:
            continue
        durations = trace.state_ns
        comm = _with_bits(durations, COMM)
        both = _with_bits(durations, COMM, COMP)
        rows.append({"rank": trace.rank, "comm_ns": comm, "overlap_ns": both})
    frame = pd.DataFrame(rows, columns=["rank", "comm_ns", "overlap_ns"])
    frame["overlap_pct"] = (
        100.0 * frame["overlap_ns"] / frame["comm_ns"].where(frame["comm_ns"] > 0)
    )
    return frame
