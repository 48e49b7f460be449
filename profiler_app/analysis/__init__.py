"""Trace analyses like Holistic Trace Analysis and ``key_averages()``, over parsed events.

``analyze`` runs them all for the ranks of a job; each is also a function of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any

import pandas as pd

from profiler_app.analysis.counters import (
    memory_bandwidth_series,
    memory_bandwidth_summary,
    queue_length_series,
    queue_length_summary,
)
from profiler_app.analysis.events import RankTrace, captured_only
from profiler_app.analysis.gpu_time import (
    DURATION_RATIO,
    NUM_KERNELS,
    comm_comp_overlap,
    kernel_stats,
    kernel_type_breakdown,
    temporal_breakdown,
    top_kernels,
)
from profiler_app.analysis.idle import (
    CONSECUTIVE_KERNEL_DELAY_NS,
    idle_time_breakdown,
)
from profiler_app.analysis.launch import (
    LAUNCH_DELAY_CUTOFF_NS,
    RUNTIME_CUTOFF_NS,
    launches,
    summarize_launches,
)
from profiler_app.analysis.operators import (
    merge_input_shapes,
    operator_table_by_shape,
)
from profiler_app.traces.window import COMPLETE_STEPS, rows_in

__all__ = [
    "ANALYSIS_PARAMETERS",
    "AnalysisParameters",
    "RankTables",
    "RankTrace",
    "TraceAnalyses",
    "analyze",
    "analyze_covered",
]


@dataclass(frozen=True)
class KernelLaunchStatisticsParams:
    """HTA's ``get_cuda_kernel_launch_stats`` cut-offs, in microseconds."""

    runtime_cutoff: int = RUNTIME_CUTOFF_NS // 1000
    launch_delay_cutoff: int = LAUNCH_DELAY_CUTOFF_NS // 1000


@dataclass(frozen=True)
class IdleTimeParams:
    """HTA's idle-time breakdown: a gap shorter than this many microseconds between kernels is
    a kernel waiting on the previous one, a longer one "other" (unless it is the host's)."""

    consecutive_kernel_delay_us: float = CONSECUTIVE_KERNEL_DELAY_NS / 1000


@dataclass(frozen=True)
class KernelBreakdownParams:
    """HTA's ``get_gpu_kernel_breakdown`` grouping: per rank and kernel type, at most
    ``num_kernels`` kernels within the ``duration_ratio`` quantile of their running total
    time keep a row of their own."""

    num_kernels: int = NUM_KERNELS
    duration_ratio: float = DURATION_RATIO


@dataclass(frozen=True)
class AnalysisParameters:
    """A group of analysis parameters, overridable per job like a rule's
    (``KernelLaunchStatistics_runtime_cutoff``)."""

    name: str
    params: type
    summary: str


ANALYSIS_PARAMETERS: dict[str, AnalysisParameters] = {
    group.name: group
    for group in (
        AnalysisParameters(
            "KernelLaunchStatistics",
            KernelLaunchStatisticsParams,
            "Kernel launches whose CPU call takes longer than runtime_cutoff µs are runtime "
            "outliers; those starting more than launch_delay_cutoff µs after their call returned "
            "are launch-delay outliers.",
        ),
        AnalysisParameters(
            "IdleTime",
            IdleTimeParams,
            "GPU idle gaps shorter than consecutive_kernel_delay_us µs between kernels count as "
            "kernel wait; gaps before a kernel launched after the stream went idle as host wait.",
        ),
        AnalysisParameters(
            "KernelBreakdown",
            KernelBreakdownParams,
            "Per rank and kernel type, the num_kernels kernels with the most GPU time keep a "
            "row of their own while their running total is within the duration_ratio quantile "
            'of the running totals (as in HTA); the rest are grouped as "others".',
        ),
    )
}


@dataclass(frozen=True)
class TraceAnalyses:
    temporal: pd.DataFrame
    kernel_types: pd.DataFrame
    kernels: pd.DataFrame
    top_kernels: pd.DataFrame  # HTA's breakdown: the top kernels per rank and type, "others"
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
    operators_by_shape: pd.DataFrame  # one row per input shape too, when recorded
    window: tuple[RankTrace, ...] = ()  # the ranks' events the GPU analyses covered
    runtime_cutoff_ns: int = RUNTIME_CUTOFF_NS  # the launch cut-off the short kernels used


def analyze(
    traces: Iterable[RankTrace],
    params: Mapping[str, Any] | None = None,
    *,
    window: str = COMPLETE_STEPS,
) -> TraceAnalyses:
    """Every analysis over the ranks, with ``params`` (group name -> parameter object, as
    ``params_from_overrides`` makes them; defaults where absent), over ``window``: the whole
    trace, or its complete steps (each trace without its last, truncated, profiler step, as
    HTA reads traces)."""
    rows_in(window)  # an unknown window is an error, not the whole trace
    # A collector job's trace figures cover the steps Kineto recorded (``captured_only``).
    ranks = [captured_only(t) for t in traces]
    gpu = [t.complete_steps() for t in ranks] if window == COMPLETE_STEPS else ranks
    return analyze_covered(gpu, params)


def analyze_covered(gpu: list[RankTrace], params: Mapping[str, Any] | None = None) -> TraceAnalyses:
    """``analyze`` of ranks already cut to the window (``captured_only``, then
    ``RankTrace.complete_steps`` for the complete steps): ``TraceAnalyses.window`` is ``gpu``."""
    chosen = params or {}
    launch = chosen.get("KernelLaunchStatistics", KernelLaunchStatisticsParams())
    idle_params = chosen.get("IdleTime", IdleTimeParams())
    breakdown = chosen.get("KernelBreakdown", KernelBreakdownParams())
    consecutive_kernel_delay_ns = round(idle_params.consecutive_kernel_delay_us * 1000)
    runtime_cutoff_ns = launch.runtime_cutoff * 1000
    launch_delay_cutoff_ns = launch.launch_delay_cutoff * 1000
    idle, idle_intervals = idle_time_breakdown(gpu, consecutive_kernel_delay_ns)
    bandwidth = memory_bandwidth_series(gpu)
    queue = queue_length_series(gpu)
    launch_table = launches(gpu)
    launch_summary = summarize_launches(launch_table, runtime_cutoff_ns, launch_delay_cutoff_ns)
    by_shape = operator_table_by_shape(gpu)
    kernels = kernel_stats(gpu)
    return TraceAnalyses(
        temporal=temporal_breakdown(gpu),
        kernel_types=kernel_type_breakdown(gpu),
        kernels=kernels,
        top_kernels=top_kernels(kernels, breakdown.num_kernels, breakdown.duration_ratio),
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
        operators=merge_input_shapes(by_shape),
        operators_by_shape=by_shape,
        window=tuple(gpu),
        runtime_cutoff_ns=runtime_cutoff_ns,
    )


TABLES = tuple(
    f.name for f in fields(TraceAnalyses) if f.name not in ("window", "runtime_cutoff_ns")
)


# Each table's ranks are joined this many at a time while they are gathered: 16,384 small frames
# of a 1,024-rank job held 130 MB more than their rows.
JOIN_EVERY = 64


@dataclass
class RankTables:
    """Each analysis table of every rank (``gather``: each rank's ``analyze`` alone, in rank
    order), made the job's one table at a time (``combined``: every table is per rank, so the
    job's is theirs one after another). Each rank's copy of a table goes once the job's is
    made, so a consumer that keeps only what it makes of each table (the analyses' JSON) never
    holds a second copy of them all; the events the ranks covered are never kept."""

    tables: dict[str, list[pd.DataFrame]]
    runtime_cutoff_ns: int

    @classmethod
    def gather(
        cls,
        per_rank: Iterable[TraceAnalyses],
        fold: Mapping[str, Callable[[pd.DataFrame], None]] | None = None,
    ) -> RankTables | None:
        """The ranks' tables, in rank order (``JOIN_EVERY`` ranks at a time joined); those
        named in ``fold`` are handed to its function, a rank at a time, and not kept. None for
        no rank."""
        fold = fold or {}
        tables: dict[str, list[pd.DataFrame]] = {name: [] for name in TABLES if name not in fold}
        cutoff = None
        for count, analyses in enumerate(per_rank, 1):
            cutoff = analyses.runtime_cutoff_ns if cutoff is None else cutoff
            for name, add in fold.items():
                add(getattr(analyses, name))
            for name, frames in tables.items():
                frames.append(getattr(analyses, name))
                if count % JOIN_EVERY == 0:
                    frames[-JOIN_EVERY:] = [_joined(frames[-JOIN_EVERY:])]
        return None if cutoff is None else cls(tables, cutoff)

    def analyses(self) -> TraceAnalyses:
        """The job's analyses (every table at once)."""
        return TraceAnalyses(**dict(self.combined()), runtime_cutoff_ns=self.runtime_cutoff_ns)

    def combined(self) -> Iterator[tuple[str, pd.DataFrame]]:
        """(name, the job's table) for each table, once: the ranks' are handed over."""
        while self.tables:
            name = next(iter(self.tables))
            yield name, _joined(self.tables.pop(name))


def _joined(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The frames one after another (joined again with others, the same table)."""
    # An empty table's columns carry no dtype: it would turn the others' into objects.
    found = [frame for frame in frames if len(frame)] or frames[:1]
    return pd.concat(found, ignore_index=True) if len(found) > 1 else found[0]
