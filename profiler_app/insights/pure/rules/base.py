"""What every rule shares: the result type, the scan schedule and small numeric helpers.

SageMaker runs each rule every ``scan_interval_us`` over the data received so far; each run is
one *evaluation*, and a rule is *triggered* when at least one evaluation found the issue. Rules
here replay that schedule over stored data: scan ``k`` sees every sample taken before
``start + k * scan_interval``, the last scan covers the last sample. ``evaluated`` counts the
scans at which the rule had enough data (past its ``patience``) to judge, ``trigger_count`` the
scans at which it found the issue.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from profiler_app.analysis.frames import GPU_UTIL, KERNEL_BUSY, JobData
from profiler_app.profiles.pure.links import TimeRange

log = logging.getLogger(__name__)

NS_PER_US = 1_000
NS_PER_S = 1_000_000_000
DEFAULT_SCAN_INTERVAL_US = 60_000_000
# A report lists at most this many time ranges per rule (the longest ones): enough to act on,
# few enough to read.
MAX_TIME_RANGES = 50
# Scans replayed at most (a week at the default minute). The rules' time and memory grow with the
# scans, and the span is the data's, not the job's: traces recorded years apart as ranks of one
# job made a million scans and gigabytes of windows.
MAX_SCANS = 10_000
NO_ACTION = "No action needed."


@dataclass(frozen=True)
class RuleResult:
    rule: str
    triggered: bool
    evaluated: int
    trigger_count: int
    violations: int
    datapoints: int
    evidence: Mapping[str, Any]
    time_ranges: tuple[TimeRange, ...]
    recommendation: str
    not_evaluated_reason: str | None
    params: Mapping[str, Any] = field(default_factory=dict)
    # The rule whose finding explains this one (``rules.causes``: pageable copies starving an
    # under-used GPU), or None.
    caused_by: str | None = None


def plain(value: Any) -> Any:
    """``value`` with numpy scalars and arrays turned into Python ones (JSON-ready evidence)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [plain(v) for v in value]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating | float):
        number = float(value)
        return None if math.isnan(number) else number
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def result(
    rule: str,
    params: Any,
    *,
    evaluated: int,
    trigger_count: int,
    violations: int,
    datapoints: int,
    evidence: Mapping[str, Any],
    time_ranges: Iterable[TimeRange] = (),
    recommendation: str,
    not_evaluated_reason: str | None = None,
) -> RuleResult:
    return RuleResult(
        rule=rule,
        triggered=trigger_count > 0,
        evaluated=int(evaluated),
        trigger_count=int(trigger_count),
        violations=int(violations),
        datapoints=int(datapoints),
        evidence=plain(evidence),
        time_ranges=tuple(
            TimeRange(
                int(r.start_ns), int(r.end_ns), str(r.node), int(r.device), int(r.rank), r.event
            )
            for r in time_ranges
        ),
        recommendation=recommendation,
        not_evaluated_reason=not_evaluated_reason,
        params=plain(vars(params)),
    )


# How to get what an imported trace lacks, for "not evaluated" reasons.
NEEDS_COLLECTOR = (
    "a PyTorch profiler trace has none; profile the job with the collector, which samples it "
    "by default"
)
NONE_RECORDED = (
    "the collector recorded none for this job (its sampling of them was off, or, for GPU "
    "metrics, the nodes have no GPU or NVML)"
)


def lacking(job: JobData, what: str) -> str:
    """Why a job has no ``what`` samples: an imported trace never has them (its only samples are
    derived from kernels); a collector job may not have recorded them."""
    imported = len(job.samples.time_ns) == 0 or job.gpu_util_source == KERNEL_BUSY
    return f"no {what}: {NEEDS_COLLECTOR if imported else NONE_RECORDED}"


def gpu_patience(job: JobData, patience: int) -> int:
    """Samples to wait for before judging. Kernel busy time comes from a torch.profiler window,
    which starts after its own warm-up steps: none of it is initialisation to skip."""
    return 0 if job.gpu_util_source == KERNEL_BUSY else patience


def gpu_source_label(job: JobData) -> str:
    if not job.has_metric(GPU_UTIL):
        return "no GPU utilisation samples"
    if job.gpu_util_source == KERNEL_BUSY:
        return "kernel busy time (no NVML samples in this profile)"
    return "NVML samples"


def not_evaluated(rule: str, params: Any, reason: str, datapoints: int = 0) -> RuleResult:
    """A rule that could not judge: never a verdict, always the reason."""
    return result(
        rule,
        params,
        evaluated=0,
        trigger_count=0,
        violations=0,
        datapoints=datapoints,
        evidence={},
        recommendation="",
        not_evaluated_reason=f"not evaluated: {reason}",
    )


# A job this short (samples per series) gets no verdict even with patience waived.
SHORT_JOB_MIN_SAMPLES = 10
# A scan interval no job's data outlasts: one scan over all of it.
ONE_SCAN_US = 10**15


def short_job_verdict(
    evaluate: Callable[[JobData, Any], RuleResult],
    job: JobData,
    params: Any,
    samples: int,
    reason: str,
    **relaxed: int,
) -> RuleResult:
    """A rule whose ``patience`` (or window) exceeds a short job: SageMaker's defaults wait for
    100–1,000 samples, more than a run of a minute records. The verdict is then taken over the
    samples the job has, in one scan (``relaxed``: the parameters that fit them), and says so: evidence
    ``short_job`` and the recommendation name the samples it rests on. Not evaluated, with
    ``reason``, when even that is impossible or under ``SHORT_JOB_MIN_SAMPLES`` samples."""
    rule = type(params).__name__.removesuffix("Params")
    fitted = replace(params, **relaxed, scan_interval_us=ONE_SCAN_US)
    if params.scan_interval_us == ONE_SCAN_US:
        return not_evaluated(rule, params, reason, samples)
    if samples < SHORT_JOB_MIN_SAMPLES:
        reason += f"; a shorter job is judged on its own samples from {SHORT_JOB_MIN_SAMPLES} on"
        return not_evaluated(rule, params, reason, samples)
    verdict = evaluate(job, fitted)
    if verdict.not_evaluated_reason is not None:
        return not_evaluated(rule, params, reason, samples)
    waived = ", ".join(
        f"{k}={getattr(params, k)}" for k in relaxed if getattr(params, k) != relaxed[k]
    )
    note = (
        f"Short job: {waived} exceeds its data, so this verdict is taken once over all of the "
        f"{samples} samples it has ({', '.join(f'{k}={v}' for k, v in relaxed.items())})."
    )
    return RuleResult(
        **{
            **vars(verdict),
            "evidence": {**verdict.evidence, "short_job": {"samples": samples, "note": note}},
            "recommendation": f"{note} {verdict.recommendation}",
            "params": plain(vars(params)),
        }
    )


# What a rule raises on data it was not written for (it is then "not evaluated", not a crash).
RULE_ERRORS = (ArithmeticError, LookupError, TypeError, ValueError)
UNREADABLE = (
    "this data has a shape the rule cannot read (a trace from another tool, or one it was not "
    "written for); the other rules are unaffected, and the worker's log has the details"
)


@dataclass(frozen=True)
class RuleSpec:
    """A rule: its name (as in ProfilerReport), parameter dataclass and evaluation."""

    name: str
    params: type
    # Of the job's data (``JobData``) for a system rule, of its trace analyses for a
    # recommendation.
    evaluate: Callable[[Any, Any], RuleResult]
    summary: str

    def judge(self, data: Any, params: Any) -> RuleResult:
        """``evaluate``, or, when it fails on data it was not written for, "not evaluated" with
        a message that says so: one rule's exception never costs the job its other insights."""
        try:
            return self.evaluate(data, params)
        except RULE_ERRORS:
            log.exception("Rule %s failed", self.name)
            return not_evaluated(self.name, params, UNREADABLE)


def scan_boundaries(start_ns: int, end_ns: int, scan_interval_us: int) -> np.ndarray:
    """End of each scan: scan k sees data before ``start + k * interval``; the last sees all.

    A span longer than MAX_SCANS intervals is scanned at a longer interval (span / MAX_SCANS)."""
    step = max(scan_interval_us * NS_PER_US, -(-(end_ns - start_ns) // MAX_SCANS))
    count = max(1, (end_ns - start_ns) // step + 1)
    return start_ns + step * np.arange(1, count + 1, dtype=np.int64)


def job_scans(job: JobData, times_ns: np.ndarray, scan_interval_us: int) -> np.ndarray:
    """Scan boundaries over the job (or, when its span is unknown, over ``times_ns``)."""
    start = job.data_start_ns()
    end = job.data_end_ns()
    return scan_boundaries(
        int(times_ns.min()) if start is None else start,
        int(times_ns.max()) if end is None else end,
        scan_interval_us,
    )


def seen_by(times_ns: np.ndarray, boundaries: np.ndarray) -> np.ndarray:
    """How many of the sorted ``times_ns`` each scan has seen."""
    return np.searchsorted(times_ns, boundaries, side="left")


def per_series(
    job: JobData, metric: str
) -> Iterable[tuple[tuple[str, int], np.ndarray, np.ndarray]]:
    """((node, device), times, values) of each device's ``metric`` samples, in time order."""
    samples = job.samples
    span = samples.span(metric)
    node, device = samples.node[span], samples.device[span]
    if len(node) == 0:
        return
    cut = np.flatnonzero((node[1:] != node[:-1]) | (device[1:] != device[:-1])) + 1
    for first, stop in zip(np.r_[0, cut], np.r_[cut, len(node)], strict=True):
        rows = slice(span.start + first, span.start + stop)
        key = (samples.nodes[node[first]], int(device[first]))
        yield key, samples.time_ns[rows], samples.value[rows]


def node_rows(job: JobData, *metrics: str) -> dict[str, np.ndarray]:
    """The samples of ``metrics`` ordered by node, then time: metric, node, device, time_ns,
    value arrays."""
    samples = job.samples
    rows = np.concatenate([np.arange(s.start, s.stop) for s in map(samples.span, metrics)])
    order = rows[np.lexsort((samples.time_ns[rows], samples.node[rows]))]
    return {
        "metric": samples.metric[order],
        "node": samples.node[order],
        "device": samples.device[order],
        "time_ns": samples.time_ns[order],
        "value": samples.value[order],
    }


def trailing_quantiles(
    values: np.ndarray, counts: np.ndarray, window: int, qs: tuple[float, ...]
) -> np.ndarray:
    """Quantiles ``qs`` of the last ``window`` values among the first ``counts[k]``, per k.

    Returns shape (len(qs), len(counts)); NaN where nothing was seen.
    """
    out = np.full((len(qs), len(counts)), np.nan)
    full = counts >= window
    if full.any():
        windows = sliding_window_view(values, window)[counts[full] - window]
        out[:, full] = np.quantile(windows, qs, axis=1)
    for k in np.flatnonzero((counts > 0) & ~full):
        out[:, k] = np.quantile(values[: counts[k]], qs)
    return out


def percentiles(values: np.ndarray, points: Iterable[int] = (5, 25, 50, 75, 95)) -> dict:
    if len(values) == 0:
        return {}
    points = tuple(points)
    found = np.percentile(values, points)
    stats = {f"p{p}": float(v) for p, v in zip(points, found, strict=True)}
    stats["min"] = float(values.min())
    stats["max"] = float(values.max())
    return stats


def series_of(rows: dict[str, np.ndarray]) -> np.ndarray:
    """One id per (metric, device) of ``node_rows``' rows."""
    return rows["metric"].astype(np.int64) * (1 << 16) + rows["device"].astype(np.int64)


def merge_ranges(ranges: Iterable[TimeRange]) -> list[TimeRange]:
    """Overlapping or touching ranges of one node and device joined into one."""
    merged: list[TimeRange] = []
    for r in sorted(ranges, key=lambda r: (r.node, r.device, r.start_ns)):
        last = merged[-1] if merged else None
        if last and (last.node, last.device) == (r.node, r.device) and r.start_ns <= last.end_ns:
            merged[-1] = last._replace(end_ns=max(last.end_ns, r.end_ns))
        else:
            merged.append(r)
    return merged


def longest(ranges: Iterable[TimeRange], limit: int = MAX_TIME_RANGES) -> list[TimeRange]:
    """The ``limit`` longest ranges, in time order."""
    kept = sorted(ranges, key=lambda r: r.end_ns - r.start_ns, reverse=True)[:limit]
    return sorted(kept, key=lambda r: (r.start_ns, r.node, r.device))


def runs(flags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, last) index of each run of True in ``flags``."""
    padded = np.concatenate(([False], flags, [False])).astype(np.int8)
    edges = np.diff(padded)
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1


def largest_rank(found: RuleResult, key: str) -> tuple[str, Mapping[str, Any]] | None:
    """(rank, figures) of the rank with the largest ``key`` among a trace recommendation's
    ranks, or None when it judged none."""
    ranks = found.evidence.get("ranks") or {}
    if not ranks:
        return None
    rank = max(ranks, key=lambda r: ranks[r].get(key) or 0.0)
    return str(rank), ranks[rank]


def of_ranks(found: RuleResult, rank: str) -> str:
    """' on rank N' where the rule judged several ranks (one rank needs no name)."""
    return f" on rank {rank}" if len(found.evidence.get("ranks") or {}) > 1 else ""


def pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0


def check_params(params: Any) -> None:
    """Refuse values a rule cannot work with; the message names the ProfilerReport key."""
    rule = type(params).__name__.removesuffix("Params")
    for name, value in vars(params).items():
        key = f"{rule}_{name}"
        if name == "mode":
            if value is not None and value not in ("TRAIN", "EVAL"):
                raise ValueError(f"{key} must be TRAIN, EVAL or empty (both), not {value!r}")
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise ValueError(f"{key} must be a number, not {value!r}")
        if name in ("window", "scan_interval_us") and value < 1:
            raise ValueError(f"{key} must be at least 1")
        if value < 0:
            raise ValueError(f"{key} must not be negative")
        if "threshold" in name and name != "threshold" and value > 100:
            raise ValueError(f"{key} is a percentage: at most 100")


@dataclass(frozen=True)
class RuleParams:
    """A rule's parameters (each one a ProfilerReport key), checked when made."""

    def __post_init__(self) -> None:
        check_params(self)
