"""CUDA kernel launch statistics: launch call time, GPU time and launch delay of each op.

Every GPU op has a host-side call that enqueued it, linked by the correlation id. The launch
delay is how long after that call returned the op started on the GPU (0 when it started
earlier, which happens when the call blocks).

A launch is what Holistic Trace Analysis calls one (``tracefmt.launches.HTA_LAUNCH_CALLS``):
the statistics and findings are over those. Every other call that enqueued a GPU op (a CUDA
graph launch, the driver API, ROCm, another accelerator's runtime) is in the table too, not
marked ``hta``, and only in the findings' ``all_launches``, the wider count shown beside HTA's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from profiler_app.analysis.events import RankTrace, describe
from tracefmt.launches import HTA_LAUNCH_CALLS

RUNTIME_CUTOFF_NS = 50_000
LAUNCH_DELAY_CUTOFF_NS = 100_000


def launches(traces: Iterable[RankTrace]) -> pd.DataFrame:
    """rank, correlation, call, op, cpu_dur_ns, gpu_dur_ns, launch_delay_ns, hta — one row per
    GPU op with the host call that enqueued it; ``hta``: the call is a launch by HTA's rule."""
    frames = []
    for trace in traces:
        pairs = trace.launch_pairs
        delay = pairs["op_start_ns"] - pairs["call_start_ns"] - pairs["call_dur_ns"]
        frames.append(
            pd.DataFrame(
                {
                    "rank": np.full(len(delay), trace.rank, dtype=np.int64),
                    "correlation": pairs["correlation"],
                    "call": trace.labels(pairs["call_name"]),
                    "op": trace.labels(pairs["op_name"]),
                    "cpu_dur_ns": pairs["call_dur_ns"],
                    "gpu_dur_ns": pairs["op_dur_ns"],
                    "launch_delay_ns": np.maximum(delay, 0),
                    "hta": trace.named(pairs["call_name"], HTA_LAUNCH_CALLS),
                },
                copy=False,  # the columns are new arrays: no second copy into 2-D blocks
            )
        )
    columns = [
        "rank",
        "correlation",
        "call",
        "op",
        "cpu_dur_ns",
        "gpu_dur_ns",
        "launch_delay_ns",
        "hta",
    ]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def short_kernels(table: pd.DataFrame, runtime_cutoff_ns: int = RUNTIME_CUTOFF_NS) -> np.ndarray:
    """Which rows of a ``launches`` table are short kernels, HTA's rule and the only one: the
    launch call took at most ``runtime_cutoff_ns`` (it is not a runtime outlier) and the op ran
    shorter on the GPU than that call took. Every count of short kernels comes from here."""
    cpu = table["cpu_dur_ns"].to_numpy()
    return (cpu <= runtime_cutoff_ns) & (table["gpu_dur_ns"].to_numpy() < cpu)


def hta_launches(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a ``launches`` table that HTA counts as launches (the table itself when all
    are: no copy)."""
    hta = table["hta"].to_numpy(dtype=bool)
    return table if hta.all() else table[hta]


@dataclass(frozen=True)
class LaunchSummary:
    """Per rank: distributions and the three kinds of finding of HTA's launch statistics."""

    stats: pd.DataFrame  # rank, measure (cpu_dur/gpu_dur/launch_delay), count, mean, ... max
    # rank, launches, short_kernels, runtime_outliers, delay_outliers (over HTA's launches),
    # all_launches (every call that enqueued a GPU op)
    findings: pd.DataFrame


def summarize_launches(
    table: pd.DataFrame,
    runtime_cutoff_ns: int = RUNTIME_CUTOFF_NS,
    launch_delay_cutoff_ns: int = LAUNCH_DELAY_CUTOFF_NS,
) -> LaunchSummary:
    """Per rank: HTA's launches (``hta`` rows), their short kernels (``short_kernels``),
    runtime outliers (launch calls longer than ``runtime_cutoff_ns``) and delay outliers (ops
    that started more than ``launch_delay_cutoff_ns`` after their launch returned); and
    ``all_launches``, every row of the rank."""
    stats = []
    findings = []
    rank_of = table["rank"].to_numpy()
    for rank in np.unique(rank_of):
        mine = rank_of == rank
        every = table if mine.all() else table[mine]  # a rank's own table is not copied
        part = hta_launches(every)
        for measure in ("cpu_dur_ns", "gpu_dur_ns", "launch_delay_ns"):
            values = part[measure].to_numpy(dtype=np.float64)
            stats.append({"rank": rank, "measure": measure, **describe(values)})
        cpu = part["cpu_dur_ns"]
        findings.append(
            {
                "rank": rank,
                "launches": len(part),
                "short_kernels": int(short_kernels(part, runtime_cutoff_ns).sum()),
                "runtime_outliers": int((cpu > runtime_cutoff_ns).sum()),
                "delay_outliers": int((part["launch_delay_ns"] > launch_delay_cutoff_ns).sum()),
                "all_launches": len(every),
            }
        )
    return LaunchSummary(
        pd.DataFrame(stats),
        pd.DataFrame(
            findings,
            columns=[
                "rank",
                "launches",
                "short_kernels",
                "runtime_outliers",
                "delay_outliers",
                "all_launches",
            ],
        ),
    )
