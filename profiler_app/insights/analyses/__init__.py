"""Trace analyses like Holistic Trace Analysis and ``key_averages()``, over parsed events.

``analyze`` runs them all for the ranks of a job; each is also a function of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from profiler_app.insights.analyses.counters import (
    memory_bandwidth_series,
    memory_bandwidth_summary,
    queue_length_series,
    queue_length_summary,
)
from profiler_app.insights.analyses.events import RankTrace, drop_last_step
from profiler_app.insights.analyses.gpu_time import (
    comm_comp_overlap,
    kernel_stats,
    kernel_type_breakdown,
    temporal_breakdown,
)
from profiler_app.insights.analyses.idle import CONSECUTIVE_KERNEL_DELAY_NS, idle_time_breakdown
from profiler_app.insights.analyses.launch import (
    LAUNCH_DELAY_CUTOFF_NS,
    RUNTIME_CUTOFF_NS,
    launches,
    summarize_launches,
)
from profiler_app.insights.analyses.operators import operator_table

__all__ = ["RankTrace", "TraceAnalyses", "analyze", "drop_last_step"]


@dataclass(frozen=True)
class TraceAnalyses:
    temporal: pd.DataFrame
    kernel_types: pd.DataFrame
    kernels: pd.DataFrame
    overlap: pd.DataFrame
    idle: pd.DataFrame
    idle_intervals: pd.DataFrame
    memory_bandwidth: pd.DataFrame
    memory_bandwidth_summary: pd.DataFrame
    queue_length: pd.DataFrame
    queue_length_summary: pd.DataFrame
    launches: pd.DataFrame
    launch_stats: pd.DataFrame
    launch_findings: pd.DataFrame
    operators: pd.DataFrame


def analyze(
    traces: Iterable[RankTrace],
    *,
    complete_steps_only: bool = True,
    consecutive_kernel_delay_ns: int = CONSECUTIVE_KERNEL_DELAY_NS,
    runtime_cutoff_ns: int = RUNTIME_CUTOFF_NS,
    launch_delay_cutoff_ns: int = LAUNCH_DELAY_CUTOFF_NS,
    group_by_input_shape: bool = False,
) -> TraceAnalyses:
    """Every analysis over the ranks. ``complete_steps_only`` leaves out each rank's last,
    usually truncated, profiler step (as HTA does); the operator table always sees it all."""
    ranks = list(traces)
    gpu = [drop_last_step(t) for t in ranks] if complete_steps_only else ranks
    idle, idle_intervals = idle_time_breakdown(gpu, consecutive_kernel_delay_ns)
    bandwidth = memory_bandwidth_series(gpu)
    queue = queue_length_series(gpu)
    launch_table = launches(gpu)
    launch_summary = summarize_launches(launch_table, runtime_cutoff_ns, launch_delay_cutoff_ns)
    return TraceAnalyses(
        temporal=temporal_breakdown(gpu),
        kernel_types=kernel_type_breakdown(gpu),
        kernels=kernel_stats(gpu),
        overlap=comm_comp_overlap(gpu),
        idle=idle,
        idle_intervals=idle_intervals,
        memory_bandwidth=bandwidth,
        memory_bandwidth_summary=memory_bandwidth_summary(bandwidth),
        queue_length=queue,
        queue_length_summary=queue_length_summary(queue),
        launches=launch_table,
        launch_stats=launch_summary.stats,
        launch_findings=launch_summary.findings,
        operators=operator_table(ranks, group_by_input_shape),
    )
