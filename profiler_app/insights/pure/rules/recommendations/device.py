"""Recommendations about the GPU side: compute precision, host-to-device copies, communication."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from profiler_app.insights.pure.analyses import TraceAnalyses
from profiler_app.insights.pure.analyses.events import COMM, COMP, RankTrace
from profiler_app.insights.pure.rules.base import (
    RuleResult,
    RuleSpec,
    check_params,
    not_evaluated,
)
from profiler_app.insights.pure.rules.recommendations.inputs import (
    NO_STEPS,
    per_rank_result,
    scope_of,
    share_pct,
    step_time_ns,
    top_ranges,
    window_label,
)
from tracefmt.kinds import EventKind, MemcpyKind
from tracefmt.names import memcpy_kind, precision_from_name, runs_on_tensor_cores

# Matrix multiplications and convolutions: the work tensor cores speed up (unless they already
# run on them: ``tracefmt.names.runs_on_tensor_cores``, the precision labels' own vocabulary).
_MATMUL = re.compile(r"gemm|conv|wgrad|dgrad|fprop|winograd|scudnn|matmul", re.I)
NO_GPU = "no GPU kernels in this profile"


@dataclass(frozen=True)
class TensorCoresParams:
    threshold_pct: float = 30  # of compute-kernel time in FP32 matrix multiplications

    def __post_init__(self) -> None:
        check_params(self)


TENSOR_CORE_ADVICE = (
    "Much of the GPU's compute time is FP32 matrix multiplication and convolution, which does "
    "not use tensor cores. On Ampere or newer GPUs allow TF32 "
    "(torch.backends.cuda.matmul.allow_tf32 = True, torch.backends.cudnn.allow_tf32 = True, or "
    "torch.set_float32_matmul_precision('high')); on any tensor-core GPU train with automatic "
    "mixed precision (torch.autocast with bfloat16 or float16, and a GradScaler for float16)."
)


def _is_fp32_matmul(name: str) -> bool:
    return (
        bool(_MATMUL.search(name))
        and not runs_on_tensor_cores(name)
        and precision_from_name(name) == "FP32"
    )


def evaluate_tensor_cores(analyses: TraceAnalyses, params: TensorCoresParams) -> RuleResult:
    rule = "TensorCores"
    ranks: dict[str, dict[str, Any]] = {}
    flagged: list = []
    ranges: list = []
    for trace in analyses.window:
        ops = trace.gpu_ops
        compute = ops[ops["type"] == COMP]
        if compute.empty:
            continue
        names = trace.names
        fp32_ids = [i for i in np.unique(compute["name"]) if _is_fp32_matmul(str(names[i]))]
        fp32 = compute[compute["name"].isin(fp32_ids)]
        compute_ns, fp32_ns = int(compute["dur_ns"].sum()), int(fp32["dur_ns"].sum())
        by_name = fp32.groupby("name")["dur_ns"].sum().nlargest(5)
        ranks[str(trace.rank)] = {
            "compute_ns": compute_ns,
            "fp32_matmul_ns": fp32_ns,
            "share_pct": share_pct(fp32_ns, compute_ns),
            "top_kernels": {str(names[i]): int(ns) for i, ns in by_name.items()},
        }
        if ranks[str(trace.rank)]["share_pct"] > params.threshold_pct:
            flagged.append(str(trace.rank))
            ranges += top_ranges(trace, fp32)
    if not ranks:
        return not_evaluated(rule, params, NO_GPU)
    return per_rank_result(
        rule,
        params,
        ranks,
        flagged,
        datapoints=len(ranks),
        evidence={"fp32_ranks": flagged},
        advice=TENSOR_CORE_ADVICE,
        time_ranges=ranges,
    )


@dataclass(frozen=True)
class HostToDeviceCopiesParams:
    pageable_pct: float = 2  # of step time copying from pageable host memory
    small_copy_bytes: int = 64 * 1024
    small_copies_per_step: float = 50

    def __post_init__(self) -> None:
        check_params(self)


COPY_ADVICE = (
    "Copies to the GPU come from pageable host memory or are many and small. Use pinned "
    "memory (DataLoader(pin_memory=True), tensor.pin_memory()) with "
    "tensor.to(device, non_blocking=True) so copies overlap with compute, and move data in "
    "fewer, larger copies (stack small tensors on the host, or keep them on the GPU)."
)


def _directions(trace: RankTrace, ops: pd.DataFrame) -> np.ndarray:
    """Each op's copy direction; from its name where the store has none (older stores)."""
    stored = ops["memcpy_kind"].to_numpy()
    unique, inverse = np.unique(ops["name"].to_numpy(), return_inverse=True)
    by_name = np.fromiter((memcpy_kind(str(trace.names[i])) for i in unique), np.int64, len(unique))
    named = by_name[inverse.reshape(-1)] if len(unique) else np.zeros(0, np.int64)
    copies = (ops["kind"] == EventKind.GPU_MEMCPY).to_numpy()
    return np.where(stored > 0, stored, np.where(copies, named, 0))


def evaluate_host_to_device_copies(
    analyses: TraceAnalyses, params: HostToDeviceCopiesParams
) -> RuleResult:
    rule = "HostToDeviceCopies"
    ranks: dict[str, dict[str, Any]] = {}
    flagged: list = []
    ranges: list = []
    for trace in analyses.window:
        scope = scope_of(trace)
        n_steps, step_ns = scope.steps, scope.scope_ns
        if not step_ns:
            continue
        ops = trace.gpu_ops
        ops = ops[scope.rows[trace.positions(ops.index.to_numpy())]]
        copies = ops[_directions(trace, ops) == MemcpyKind.HTOD]
        kernels_ns = int(ops.loc[ops["kind"].to_numpy() == EventKind.KERNEL, "dur_ns"].sum())
        names = trace.names
        pageable_ids = [i for i in np.unique(copies["name"]) if "Pageable" in str(names[i])]
        pageable = copies[copies["name"].isin(pageable_ids)]
        small = copies[(copies["bytes"] >= 0) & (copies["bytes"] < params.small_copy_bytes)]
        evidence: dict[str, Any] = {
            "steps": n_steps,
            "window": scope.label,
            "step_ns": step_ns,
            "kernel_ns": kernels_ns,
            "copies": len(copies),
            "pageable_copies": len(pageable),
            "pageable_bytes": int(pageable["bytes"].clip(lower=0).sum()),
            "pageable_ns": int(pageable["dur_ns"].sum()),
            "pageable_pct_of_steps": share_pct(int(pageable["dur_ns"].sum()), step_ns),
            "small_copies": len(small),
            "small_copies_per_step": len(small) / max(n_steps, 1),
        }
        ranks[str(trace.rank)] = evidence
        if (
            evidence["pageable_pct_of_steps"] > params.pageable_pct
            or evidence["small_copies_per_step"] > params.small_copies_per_step
        ):
            flagged.append(str(trace.rank))
            ranges += top_ranges(trace, pageable if len(pageable) else small)
    if not ranks:
        return not_evaluated(rule, params, NO_STEPS)
    return per_rank_result(
        rule,
        params,
        ranks,
        flagged,
        datapoints=sum(v["copies"] for v in ranks.values()),
        evidence={"flagged_ranks": flagged},
        advice=COPY_ADVICE,
        time_ranges=ranges,
    )


@dataclass(frozen=True)
class CommunicationParams:
    min_comm_pct: float = 5  # of step time in communication kernels, to look at all
    overlap_pct: float = 50  # communication overlapped with computation, below which: fire
    slow_rank_pct: float = 10  # a rank's mean step above the median of all ranks' by this

    def __post_init__(self) -> None:
        check_params(self)


COMM_ADVICE = (
    "Communication is exposed: the GPUs wait for it instead of computing meanwhile. Let "
    "DistributedDataParallel overlap it with the backward pass (tune bucket_cap_mb, use "
    "gradient_as_bucket_view=True, avoid find_unused_parameters), and check that no rank is "
    "slower than the others: every collective waits for the slowest."
)


def evaluate_communication(analyses: TraceAnalyses, params: CommunicationParams) -> RuleResult:
    rule = "Communication"
    overlap = analyses.overlap.set_index("rank")
    ranks: dict[str, dict[str, Any]] = {}
    exposed: list = []
    ranges: list = []
    mean_steps: dict[int, float] = {}
    for trace in analyses.window:
        n_steps, step_ns = step_time_ns(trace)
        if not step_ns:
            continue
        if n_steps:
            mean_steps[trace.rank] = step_ns / n_steps
        comm_ns = int(overlap.at[trace.rank, "comm_ns"]) if trace.rank in overlap.index else 0
        overlapped = float(overlap.at[trace.rank, "overlap_pct"]) if comm_ns else 0.0
        ranks[str(trace.rank)] = {
            "steps": n_steps,
            "window": window_label(trace, n_steps),
            "step_ns": step_ns,
            "comm_ns": comm_ns,
            "comm_pct_of_steps": share_pct(comm_ns, step_ns),
            "overlap_pct": overlapped,
        }
        if share_pct(comm_ns, step_ns) > params.min_comm_pct and overlapped < params.overlap_pct:
            exposed.append(str(trace.rank))
            ops = trace.gpu_ops
            ranges += top_ranges(trace, ops[ops["type"] == COMM])
    slow = _slow_ranks(mean_steps, params.slow_rank_pct)
    if not ranks:
        return not_evaluated(rule, params, NO_STEPS)
    return per_rank_result(
        rule,
        params,
        ranks,
        [*exposed, *(s["rank"] for s in slow)],
        datapoints=len(ranks),
        evidence={"exposed_ranks": exposed, "slow_ranks": slow},
        advice=COMM_ADVICE,
        time_ranges=ranges,
    )


def _slow_ranks(mean_step_ns: dict[int, float], slow_pct: float) -> list[dict]:
    """Ranks whose mean step is more than ``slow_pct`` above the median rank's."""
    if len(mean_step_ns) < 2:
        return []
    median = float(np.median(list(mean_step_ns.values())))
    return [
        {"rank": rank, "mean_step_ns": mean, "above_median_pct": share_pct(mean - median, median)}
        for rank, mean in sorted(mean_step_ns.items())
        if mean > median * (1 + slow_pct / 100)
    ]


TENSOR_CORES = RuleSpec(
    "TensorCores",
    TensorCoresParams,
    evaluate_tensor_cores,  # type: ignore[arg-type]
    "Share of compute-kernel time spent in FP32 matrix multiplications and convolutions "
    "(no tensor cores), over threshold_pct.",
)
HOST_TO_DEVICE_COPIES = RuleSpec(
    "HostToDeviceCopies",
    HostToDeviceCopiesParams,
    evaluate_host_to_device_copies,  # type: ignore[arg-type]
    "Host-to-device copies from pageable memory above pageable_pct of step time, or more than "
    "small_copies_per_step copies under small_copy_bytes per step.",
)
COMMUNICATION = RuleSpec(
    "Communication",
    CommunicationParams,
    evaluate_communication,  # type: ignore[arg-type]
    "Communication kernels above min_comm_pct of step time and overlapped with computation "
    "less than overlap_pct; ranks whose mean step is slow_rank_pct above the median.",
)
