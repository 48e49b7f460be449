"""Recommendations about the host side of the steps: data loading, synchronisation, launches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from profiler_app.analysis import TraceAnalyses
from profiler_app.analysis.events import RankTrace
from profiler_app.analysis.launch import hta_launches, short_kernels
from profiler_app.insights.pure.rules.base import (
    RuleParams,
    RuleResult,
    RuleSpec,
    TimeRange,
)
from profiler_app.insights.pure.rules.recommendations.inputs import (
    NO_STEPS,
    RankInputs,
    RankJudgement,
    RankRule,
    above,
    combined,
    covered_ns,
    events_named,
    scope_of,
    share_pct,
    top_events,
    top_ranges,
)
from tracefmt.kinds import HOST_KINDS, EventKind


def _is_data_loading(name: str) -> bool:
    return name.startswith("enumerate(DataLoader)") or "DataLoaderIter" in name


@dataclass(frozen=True)
class DataLoadingParams(RuleParams):
    threshold_pct: float = 10  # of step time spent fetching batches


NO_DATA_LOADER = (
    "no data-loader events in the steps: the captures recorded no CPU activity, or the loop "
    "fetches no batch from a DataLoader, so the wait for data cannot be told"
)
DATA_LOADING_ADVICE = (
    "The training loop waits for its next batch. Load data in parallel: raise the DataLoader's "
    "num_workers, keep workers alive between epochs (persistent_workers=True), prefetch more "
    "batches (prefetch_factor), and use pin_memory=True for faster copies to the GPU."
)


def _time_in(
    trace: RankTrace, wanted: Callable[[str], bool], key: str
) -> tuple[dict[str, Any], pd.DataFrame] | None:
    """The rank's host events ``wanted`` names inside its scope (``scope_of``: its steps, or
    the steady state of a trace without them), and the share of the scope they cover (nested
    ones once) as ``key``; None for a rank without events."""
    scope = scope_of(trace)
    if not scope.scope_ns:
        return None
    events = events_named(trace, wanted, HOST_KINDS, scope.rows)
    busy_ns = covered_ns(events)
    figures = {
        "steps": scope.steps,
        "window": scope.label,
        "step_ns": scope.scope_ns,
        key: busy_ns,
        "share_pct": share_pct(busy_ns, scope.scope_ns),
    }
    return figures, events


def _data_loading_rank(trace: RankTrace, analyses: TraceAnalyses) -> RankInputs | None:
    """Share of the rank's iterations spent waiting for the data loader's next batch: its
    ``__next__`` inside the steps, and the one just before each step (a loop
    ``for batch in loader: with annotate("step_<n>")`` fetches before its step begins, where
    torch.profiler's ProfilerStep counts the fetch in the step). The share is of the steps'
    time and those waits. None without steps or without any data-loader event: the captures
    then cannot tell the wait (no CPU activity recorded, or no DataLoader), which is no 0."""
    scope = scope_of(trace)
    if not scope.scope_ns:
        return None
    loading = events_named(trace, _is_data_loading, HOST_KINDS)
    if loading.empty:
        return None
    before = _just_before_steps(trace, loading[loading["step"].to_numpy() < 0])
    inside = loading[scope.rows[trace.positions(loading.index.to_numpy())]]
    waits = pd.concat([inside, before]) if len(before) else inside
    wait_ns, before_ns = covered_ns(waits), covered_ns(before)
    share = share_pct(wait_ns, scope.scope_ns + before_ns)
    figures: dict[str, Any] = {
        "steps": scope.steps,
        "window": scope.label,
        "step_ns": scope.scope_ns,
        "data_loading_ns": wait_ns,
        "before_steps_ns": before_ns,
        "share_pct": share,
    }
    return RankInputs(trace.rank, figures, top_ranges(trace, waits), top_events(trace, waits))


def _just_before_steps(trace: RankTrace, outside: pd.DataFrame) -> pd.DataFrame:
    """The events of ``outside`` (in no step) that start between a step and the step before
    it (since the trace's start for the first): the fetch of the batch that step trains on."""
    steps = trace.step_events
    if outside.empty or steps.empty:
        return outside.iloc[:0]
    order = np.argsort(steps["start_ns"].to_numpy(), kind="stable")
    start = steps["start_ns"].to_numpy()[order]
    end = np.maximum.accumulate(start + steps["dur_ns"].to_numpy()[order])
    at = outside["start_ns"].to_numpy()
    following = np.searchsorted(start, at, side="right")  # the first step starting after
    earliest = np.iinfo(np.int64).min
    previous_end = np.where(following > 0, end[np.maximum(following - 1, 0)], earliest)
    return outside[(following < len(start)) & (at >= previous_end)]


def _data_loading(judgements: list[RankJudgement], params: DataLoadingParams) -> RuleResult:
    return combined(
        "DataLoading",
        params,
        judgements,
        flagged_key="slow_ranks",
        listed_key="top_events",
        datapoints=lambda figures: figures["steps"],
        advice=DATA_LOADING_ADVICE,
        nothing_judged=NO_DATA_LOADER,
    )


DATA_LOADING_BY_RANK = RankRule(
    _data_loading_rank,
    above("share_pct", "threshold_pct", linked_unflagged=True),
    _data_loading,  # type: ignore[arg-type]
)


# Host calls that wait for the GPU: explicit synchronisation, and reading a GPU value on the
# host (``.item()``, printing or branching on a tensor, ``.cpu()``/``.tolist()``).
SYNC_NAMES = frozenset(
    {
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaEventSynchronize",
        "cudaStreamWaitEvent",
        "hipStreamSynchronize",
        "hipDeviceSynchronize",
        "hipEventSynchronize",
        "aten::item",
        "aten::_local_scalar_dense",
    }
)


@dataclass(frozen=True)
class SynchronizationParams(RuleParams):
    threshold_pct: float = 5  # of step time the host spends waiting for the GPU


SYNC_ADVICE = (
    "The host stops and waits for the GPU inside the steps. Remove implicit synchronisations "
    "from the loop: no .item(), .cpu(), .tolist() or print of a GPU tensor per step (log every "
    "N steps, or accumulate on the GPU), no Python branching on GPU values, no "
    "torch.cuda.synchronize(); copy results with non_blocking=True into pinned memory."
)


def _call_sites(trace: RankTrace, event: pd.Series) -> list[str]:
    """What encloses a waiting call on its thread (its ancestors in the event model),
    outermost first: Python frames where the trace recorded stacks, else CPU operators."""
    events = trace.events
    kind, name, parent = (events[c].to_numpy() for c in ("kind", "name", "parent"))
    chain: list[int] = []
    at = trace.positions(np.array([event["parent"]]))[0] if event["parent"] >= 0 else -1
    while at >= 0:
        chain.append(int(at))
        up = parent[at]
        at = trace.positions(np.array([up]))[0] if up >= 0 else -1
    chain.reverse()
    python = [i for i in chain if kind[i] == EventKind.PYTHON_FUNCTION]
    chosen = python or [i for i in chain if kind[i] == EventKind.CPU_OP]
    return [str(trace.names[name[i]]) for i in chosen]


def _synchronization_rank(trace: RankTrace, analyses: TraceAnalyses) -> RankInputs | None:
    found = _time_in(trace, SYNC_NAMES.__contains__, "waiting_ns")
    if found is None:
        return None
    figures, waits = found
    by_call = waits.groupby(trace.labels(waits["name"].to_numpy()), observed=True)["dur_ns"]
    figures["calls"] = {
        str(name): {"count": int(count), "total_ns": int(total)}
        for name, count, total in zip(
            by_call.count().index, by_call.count(), by_call.sum(), strict=True
        )
    }
    sites = [
        {
            "call": str(trace.names[int(event["name"])]),
            "rank": trace.rank,
            "dur_ns": int(event["dur_ns"]),
            "stack": _call_sites(trace, event),
        }
        for _, event in waits.nlargest(3, "dur_ns").iterrows()
    ]
    return RankInputs(trace.rank, figures, top_ranges(trace, waits), sites)


def _synchronization(judgements: list[RankJudgement], params: SynchronizationParams) -> RuleResult:
    return combined(
        "Synchronization",
        params,
        judgements,
        flagged_key="waiting_ranks",
        listed_key="call_sites",
        datapoints=lambda figures: figures["steps"],
        advice=SYNC_ADVICE,
        nothing_judged=NO_STEPS,
    )


SYNCHRONIZATION_BY_RANK = RankRule(
    _synchronization_rank,
    above("share_pct", "threshold_pct", linked_unflagged=True),
    _synchronization,  # type: ignore[arg-type]
)


@dataclass(frozen=True)
class LaunchOverheadParams(RuleParams):
    short_kernel_pct: float = 50  # of launches that are short kernels (``short_kernels``)
    gpu_idle_pct: float = 20  # of the GPU's span spent idle
    min_launches: int = 100


LAUNCH_ADVICE = (
    "The GPU runs many kernels shorter than the CPU takes to launch them, and sits idle "
    "between them: the step is launch-bound. Capture the step in a CUDA graph "
    "(torch.cuda.graphs, or torch.compile(mode='reduce-overhead')), let torch.compile fuse "
    "small operations, or give each kernel more work (a larger batch)."
)


def _busiest_steps(trace: RankTrace, correlations: pd.Series, n: int = 3) -> list[TimeRange]:
    """The ``n`` steps that ran the most of these launches' kernels."""
    steps = trace.step_events
    if steps.empty:
        return []
    steps = steps.sort_values("start_ns")
    ops = trace.gpu_ops
    starts = ops.loc[ops["correlation"].isin(correlations), "start_ns"].to_numpy()
    step_of = np.searchsorted(steps["start_ns"].to_numpy(), starts, side="right") - 1
    counts = np.bincount(step_of[step_of >= 0], minlength=len(steps))
    top = np.argsort(-counts, kind="stable")[:n]
    chosen = steps.iloc[top[counts[top] > 0]]
    return [
        TimeRange(int(start), int(start + dur), "", -1, trace.rank, "")
        for start, dur in zip(chosen["start_ns"], chosen["dur_ns"], strict=True)
    ]


def _launch_overhead_rank(trace: RankTrace, analyses: TraceAnalyses) -> RankInputs | None:
    # HTA's launches, as the launch findings count them: one launch figure per rank.
    table = hta_launches(analyses.launches)
    mine = table["rank"].to_numpy() == trace.rank
    group = table if mine.all() else table[mine]  # a rank's own table is not copied
    scope = scope_of(trace)
    in_scope = trace.events["correlation"].to_numpy()[scope.rows]
    # The launches made inside the rank's steps (or steady state).
    group = group[np.isin(group["correlation"].to_numpy(), in_scope[in_scope >= 0])]
    if group.empty:
        return None
    short = short_kernels(group, analyses.runtime_cutoff_ns)
    temporal = analyses.temporal
    mine = temporal[temporal["rank"] == trace.rank]
    idle = float(mine["idle_pct"].iloc[0]) if len(mine) else 0.0
    names = group["op"][short].value_counts().head(5)
    figures: dict[str, Any] = {
        "window": scope.label,
        "launches": len(group),
        "short_kernels": int(short.sum()),
        "short_pct": share_pct(short.sum(), len(group)),
        "gpu_idle_pct": idle,
        "median_cpu_launch_ns": float(np.median(group["cpu_dur_ns"])),
        "median_gpu_ns": float(np.median(group["gpu_dur_ns"])),
        "top_short_kernels": {str(k): int(v) for k, v in names.items()},
    }
    return RankInputs(trace.rank, figures, _busiest_steps(trace, group["correlation"][short]))


def _judge_launch_overhead(found: RankInputs, params: LaunchOverheadParams) -> RankJudgement:
    figures = found.figures
    bound = (
        figures["launches"] >= params.min_launches  # a few cannot make a step launch-bound
        and figures["short_pct"] > params.short_kernel_pct
        and figures["gpu_idle_pct"] > params.gpu_idle_pct
    )
    return RankJudgement(found.rank, figures, bound, found.time_ranges if bound else [])


def _launch_overhead(judgements: list[RankJudgement], params: LaunchOverheadParams) -> RuleResult:
    return combined(
        "LaunchOverhead",
        params,
        sorted(judgements, key=lambda j: j.rank),
        flagged_key="launch_bound_ranks",
        datapoints=lambda figures: figures["launches"],
        advice=LAUNCH_ADVICE,
        nothing_judged="no kernel launches in the profile as HTA counts them (cudaLaunchKernel, "
        "cudaLaunchKernelExC, cudaMemcpyAsync, cudaMemsetAsync, MTIA's runFunction; ROCm's "
        "calls are not among them)",
    )


LAUNCH_OVERHEAD_BY_RANK = RankRule(
    _launch_overhead_rank,
    _judge_launch_overhead,  # type: ignore[arg-type]
    _launch_overhead,  # type: ignore[arg-type]
)


DATA_LOADING = RuleSpec(
    "DataLoading",
    DataLoadingParams,
    DATA_LOADING_BY_RANK.evaluate,
    "Share of each rank's step time spent waiting for the data loader's next batch "
    "(enumerate(DataLoader) / DataLoaderIter.__next__), over threshold_pct.",
)
SYNCHRONIZATION = RuleSpec(
    "Synchronization",
    SynchronizationParams,
    SYNCHRONIZATION_BY_RANK.evaluate,
    "Share of each rank's step time the host spends waiting for the GPU (stream/device "
    "synchronisation, .item() and other reads of GPU values), over threshold_pct.",
)
LAUNCH_OVERHEAD = RuleSpec(
    "LaunchOverhead",
    LaunchOverheadParams,
    LAUNCH_OVERHEAD_BY_RANK.evaluate,
    "Launch-bound steps: more than short_kernel_pct of the kernels are short (launched by a "
    "call within the runtime cut-off and shorter on the GPU than that call) while the GPU is "
    "idle more than gpu_idle_pct of its span.",
)
