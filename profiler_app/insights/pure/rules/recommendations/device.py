"""Recommendations about the GPU side: compute precision, host-to-device copies, communication."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from profiler_app.analysis import TraceAnalyses
from profiler_app.analysis.events import COMM, COMP, RankTrace, per_name
from profiler_app.insights.pure.rules.base import (
    RuleParams,
    RuleResult,
    RuleSpec,
    TimeRange,
    not_evaluated,
)
from profiler_app.insights.pure.rules.recommendations.inputs import (
    NO_STEPS,
    TOP_EVENTS,
    RankInputs,
    RankJudgement,
    RankRule,
    above,
    combined,
    links,
    per_rank_result,
    scope_of,
    share_pct,
    step_time_ns,
    top_ranges,
    window_label,
)
from profiler_app.traces.figures import KERNEL_TYPES
from tracefmt.kinds import EventKind, MemcpyKind
from tracefmt.names import memcpy_kind, precision_from_name, runs_on_tensor_cores
from tracefmt.strings import present_ids

# Matrix multiplications and convolutions: the work tensor cores speed up (unless they already
# run on them: ``tracefmt.names.runs_on_tensor_cores``, the precision labels' own vocabulary).
_MATMUL = re.compile(r"gemm|conv|wgrad|dgrad|fprop|winograd|scudnn|matmul", re.I)
NO_GPU = "no GPU kernels in this profile"


@dataclass(frozen=True)
class TensorCoresParams(RuleParams):
    threshold_pct: float = 30  # of compute-kernel time in FP32 matrix multiplications


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


def _tensor_cores_rank(trace: RankTrace, analyses: TraceAnalyses) -> RankInputs | None:
    ops = trace.gpu_ops[["name", "start_ns", "dur_ns", "type"]]  # not every column of every op
    compute = ops[(ops["type"] == COMP).to_numpy()]
    if compute.empty:
        return None
    names = trace.names
    present = present_ids(compute["name"].to_numpy())
    fp32_ids = [i for i in present if _is_fp32_matmul(str(names[i]))]
    fp32 = compute[np.isin(compute["name"].to_numpy(), fp32_ids)]
    compute_ns, fp32_ns = int(compute["dur_ns"].sum()), int(fp32["dur_ns"].sum())
    by_name = fp32.groupby("name")["dur_ns"].sum().nlargest(5)
    figures = {
        "compute_ns": compute_ns,
        "fp32_matmul_ns": fp32_ns,
        "share_pct": share_pct(fp32_ns, compute_ns),
        "top_kernels": {str(names[i]): int(ns) for i, ns in by_name.items()},
    }
    return RankInputs(trace.rank, figures, top_ranges(trace, fp32))


def _tensor_cores(judgements: list[RankJudgement], params: TensorCoresParams) -> RuleResult:
    return combined(
        "TensorCores",
        params,
        judgements,
        flagged_key="fp32_ranks",
        datapoints=None,
        advice=TENSOR_CORE_ADVICE,
        nothing_judged=NO_GPU,
    )


TENSOR_CORES_BY_RANK = RankRule(
    _tensor_cores_rank,
    above("share_pct", "threshold_pct"),
    _tensor_cores,  # type: ignore[arg-type]
)


@dataclass(frozen=True)
class HostToDeviceCopiesParams(RuleParams):
    pageable_pct: float = 2  # of step time copying from pageable host memory
    small_copy_bytes: int = 64 * 1024
    small_copies_per_step: float = 50


COPY_ADVICE = (
    "Copies to the GPU come from pageable host memory or are many and small. Use pinned "
    "memory (DataLoader(pin_memory=True), tensor.pin_memory()) with "
    "tensor.to(device, non_blocking=True) so copies overlap with compute, and move data in "
    "fewer, larger copies (stack small tensors on the host, or keep them on the GPU)."
)


def _directions(trace: RankTrace, ops: pd.DataFrame) -> np.ndarray:
    """Each op's copy direction; from its name where the store has none (older stores)."""
    stored = ops["memcpy_kind"].to_numpy()
    named = per_name(trace.names, ops["name"].to_numpy(), memcpy_kind)
    copies = (ops["kind"] == EventKind.GPU_MEMCPY).to_numpy()
    return np.where(stored > 0, stored, np.where(copies, named, 0))


def _copies_rank(trace: RankTrace, analyses: TraceAnalyses) -> RankInputs | None:
    scope = scope_of(trace)
    n_steps, step_ns = scope.steps, scope.scope_ns
    if not step_ns:
        return None
    ops = trace.gpu_ops
    ops = ops[scope.rows[trace.gpu_op_rows]]
    copies = ops[_directions(trace, ops) == MemcpyKind.HTOD]
    kernels_ns = int(ops.loc[ops["type"].isin(KERNEL_TYPES).to_numpy(), "dur_ns"].sum())
    names = trace.names
    pageable_ids = [i for i in np.unique(copies["name"]) if "Pageable" in str(names[i])]
    pageable = copies[copies["name"].isin(pageable_ids)]
    figures: dict[str, Any] = {
        "steps": n_steps,
        "window": scope.label,
        "step_ns": step_ns,
        "kernel_ns": kernels_ns,
        "copies": len(copies),
        "pageable_copies": len(pageable),
        "pageable_bytes": int(pageable["bytes"].clip(lower=0).sum()),
        "pageable_ns": int(pageable["dur_ns"].sum()),
        "pageable_pct_of_steps": share_pct(int(pageable["dur_ns"].sum()), step_ns),
    }
    # Which copies are small is the parameters': each copy's size and link, for the judgement.
    sized = copies[copies["bytes"] >= 0]
    sizes = pd.DataFrame(
        {
            "bytes": sized["bytes"].to_numpy(),
            "dur_ns": sized["dur_ns"].to_numpy(),
            "link": pd.Series(links(trace, sized), dtype=object),
        }
    )
    return RankInputs(trace.rank, figures, top_ranges(trace, pageable), kept=sizes)


def _judge_copies(found: RankInputs, params: HostToDeviceCopiesParams) -> RankJudgement:
    sizes = found.kept
    small = sizes[sizes["bytes"] < params.small_copy_bytes]
    figures = {
        **found.figures,
        "small_copies": len(small),
        "small_copies_per_step": len(small) / max(found.figures["steps"], 1),
    }
    flagged = (
        figures["pageable_pct_of_steps"] > params.pageable_pct
        or figures["small_copies_per_step"] > params.small_copies_per_step
    )
    ranges: list[TimeRange] = []
    if flagged:
        longest = small.nlargest(TOP_EVENTS, "dur_ns")["link"].tolist()
        ranges = found.time_ranges if figures["pageable_copies"] else longest
    return RankJudgement(found.rank, figures, flagged, ranges)


def _copies(judgements: list[RankJudgement], params: HostToDeviceCopiesParams) -> RuleResult:
    return combined(
        "HostToDeviceCopies",
        params,
        judgements,
        flagged_key="flagged_ranks",
        datapoints=lambda figures: figures["copies"],
        advice=COPY_ADVICE,
        nothing_judged=NO_STEPS,
    )


HOST_TO_DEVICE_COPIES_BY_RANK = RankRule(_copies_rank, _judge_copies, _copies)  # type: ignore[arg-type]


@dataclass(frozen=True)
class CommunicationParams(RuleParams):
    min_comm_pct: float = 5  # of step time in communication kernels, to look at all
    overlap_pct: float = 50  # communication overlapped with computation, below which: fire
    slow_rank_pct: float = 10  # a rank's mean step above the median of all ranks' by this


COMM_ADVICE = (
    "Communication is exposed: the GPUs wait for it instead of computing meanwhile. Let "
    "DistributedDataParallel overlap it with the backward pass (tune bucket_cap_mb, use "
    "gradient_as_bucket_view=True, avoid find_unused_parameters), and check that no rank is "
    "slower than the others: every collective waits for the slowest."
)


def _communication_rank(trace: RankTrace, analyses: TraceAnalyses) -> RankInputs | None:
    n_steps, step_ns = step_time_ns(trace)
    if not step_ns:
        return None
    overlap = analyses.overlap
    mine = overlap[overlap["rank"] == trace.rank]
    comm_ns = int(mine["comm_ns"].iloc[0]) if len(mine) else 0
    overlapped = float(mine["overlap_pct"].iloc[0]) if comm_ns else 0.0
    figures = {
        "steps": n_steps,
        "window": window_label(trace, n_steps),
        "step_ns": step_ns,
        "comm_ns": comm_ns,
        "comm_pct_of_steps": share_pct(comm_ns, step_ns),
        "overlap_pct": overlapped,
    }
    ops = trace.gpu_ops
    return RankInputs(trace.rank, figures, top_ranges(trace, ops[ops["type"] == COMM]))


def _judge_communication(found: RankInputs, params: CommunicationParams) -> RankJudgement:
    figures = found.figures
    exposed = (
        figures["comm_pct_of_steps"] > params.min_comm_pct
        and figures["overlap_pct"] < params.overlap_pct
    )
    return RankJudgement(found.rank, figures, exposed, found.time_ranges if exposed else [])


def _communication(judgements: list[RankJudgement], params: CommunicationParams) -> RuleResult:
    if not judgements:
        return not_evaluated("Communication", params, NO_STEPS)
    exposed = [str(j.rank) for j in judgements if j.flagged]
    mean_steps = {
        j.rank: j.figures["step_ns"] / j.figures["steps"] for j in judgements if j.figures["steps"]
    }
    slow = _slow_ranks(mean_steps, params.slow_rank_pct)
    return per_rank_result(
        "Communication",
        params,
        {str(j.rank): j.figures for j in judgements},
        [*exposed, *(s["rank"] for s in slow)],
        datapoints=len(judgements),
        evidence={"exposed_ranks": exposed, "slow_ranks": slow},
        advice=COMM_ADVICE,
        time_ranges=[r for j in judgements for r in j.time_ranges],
    )


COMMUNICATION_BY_RANK = RankRule(
    _communication_rank,
    _judge_communication,
    _communication,  # type: ignore[arg-type]
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
    TENSOR_CORES_BY_RANK.evaluate,
    "Share of compute-kernel time spent in FP32 matrix multiplications and convolutions "
    "(no tensor cores), over threshold_pct.",
)
HOST_TO_DEVICE_COPIES = RuleSpec(
    "HostToDeviceCopies",
    HostToDeviceCopiesParams,
    HOST_TO_DEVICE_COPIES_BY_RANK.evaluate,
    "Host-to-device copies from pageable memory above pageable_pct of step time, or more than "
    "small_copies_per_step copies under small_copy_bytes per step.",
)
COMMUNICATION = RuleSpec(
    "Communication",
    CommunicationParams,
    COMMUNICATION_BY_RANK.evaluate,
    "Communication kernels above min_comm_pct of step time and overlapped with computation "
    "less than overlap_pct; ranks whose mean step is slow_rank_pct above the median.",
)
