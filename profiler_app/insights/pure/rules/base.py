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
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

from profiler_app.analysis.frames import GPU_UTIL, KERNEL_BUSY, JobData
from profiler_app.profiles.pure.links import TimeRange

log = logging.getLogger(__name__)

NS_PER_US = 1_000
NS_PER_S = 1_000_000_000
DEFAULT_SCAN_INTERVAL_US = 60_000_000
# Samples of one node closer than this belong to one system snapshot: the sampler threads of
# several processes do not wake at exactly the same instant.
SNAPSHOT_GAP_NS = 20_000_000
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


def snapshot_ids(
    nodes: np.ndarray, times_ns: np.ndarray, series: np.ndarray | None = None
) -> np.ndarray:
    """Snapshot number of each sample (rows sorted by node, then time). A snapshot is the
    samples of a node taken together: a new one starts at a gap longer than SNAPSHOT_GAP_NS,
    or than half the node's sampling interval (the median interval between two samples of one
    ``series``, a device of a metric) when that is shorter: 1 ms kernel-busy points are 1 ms
    snapshots, not one snapshot of the whole trace. A series sampled again within one
    snapshot starts the next one (``_split_repeats``)."""
    if len(times_ns) == 0:
        return np.zeros(0, dtype=np.int64)
    by_series = _SeriesRows.of(_series_key(nodes, series))
    new = np.ones(len(times_ns), dtype=bool)
    gap = _snapshot_gaps(times_ns, by_series)
    new[1:] = (nodes[1:] != nodes[:-1]) | (np.diff(times_ns) > gap[1:])
    return _split_repeats(new, nodes, times_ns, by_series)


@dataclass(frozen=True)
class _SeriesRows:
    """The rows of each series (``_series_key``), grouped without sorting the samples: ``code``
    numbers each row's series, ``keys`` holds each number's key, and ``order`` lists the rows
    series by series (each series' rows in their order, so in time order)."""

    code: np.ndarray
    keys: np.ndarray
    order: np.ndarray

    @classmethod
    def of(cls, key: np.ndarray) -> _SeriesRows:
        code, keys = pd.factorize(key)  # by hashing; series are few, samples many
        # A stable sort of small integers is a radix sort: linear in the samples.
        small = code.astype(np.int16) if len(keys) <= np.iinfo(np.int16).max else code
        return cls(code, keys, np.argsort(small, kind="stable"))

    def bounds(self) -> np.ndarray:
        """Where each series' rows start in ``order``, and where the last one stops."""
        return np.r_[0, np.cumsum(np.bincount(self.code, minlength=len(self.keys)))]


def _split_repeats(
    new: np.ndarray, nodes: np.ndarray, times_ns: np.ndarray, by_series: _SeriesRows
) -> np.ndarray:
    """Snapshot ids from the ``new`` flags, where a later sample of a series already in the
    snapshot starts a new one: the collector's last samples, taken as the job ends, can follow
    the regular ones by a few milliseconds, and one snapshot of both averaged two CPU readings
    into a value nobody measured and counted the GPU memory in use twice. Samples of a series
    at the same instant (one GPU in two ranks' traces) stay together."""
    if not (~new[1:] & (times_ns[1:] != times_ns[:-1])).any():
        return np.cumsum(new) - 1  # every snapshot is one instant: nothing to split
    # In series order, each row after an earlier row of its series (rows are in time order on
    # each node): a repeat when both are in one snapshot.
    order = by_series.order
    same = np.ones(max(len(order) - 1, 0), dtype=bool)
    same[by_series.bounds()[1:-1] - 1] = False  # the first row of each series but the first
    ordered_times = times_ns[order]
    later = same & (ordered_times[1:] > ordered_times[:-1])
    instant_start = None
    new = new.copy()
    while True:
        snap = np.cumsum(new) - 1
        in_order = snap[order]
        repeat = np.sort(order[1:][later & (in_order[1:] == in_order[:-1])])
        if len(repeat) == 0:
            return snap
        if instant_start is None:
            # The first row of each row's instant on its node: a new snapshot starts there.
            instant = np.r_[True, (nodes[1:] != nodes[:-1]) | (times_ns[1:] != times_ns[:-1])]
            instant_start = np.maximum.accumulate(np.where(instant, np.arange(len(new)), 0))
        # The first repeat of each snapshot starts a new one at its instant; the later ones
        # are looked at again in the snapshot it starts.
        first = repeat[np.r_[True, snap[repeat][1:] != snap[repeat][:-1]]]
        new[instant_start[first]] = True


SERIES_BITS = 40


def _series_key(nodes: np.ndarray, series: np.ndarray | None) -> np.ndarray:
    """One non-negative integer per (node, series), the node in the bits above SERIES_BITS: a
    whole-host series is device -1, which, added as it is, read as the node before."""
    if series is None:
        return nodes.astype(np.int64) << SERIES_BITS
    offset = series.astype(np.int64) - int(series.min())
    return (nodes.astype(np.int64) << SERIES_BITS) | offset


def _snapshot_gaps(times_ns: np.ndarray, by_series: _SeriesRows) -> np.ndarray:
    """Each sample's snapshot gap (``snapshot_ids``), by its node: a series' interval is its
    span over its samples less one."""
    bounds, order = by_series.bounds(), by_series.order
    count = np.diff(bounds)
    several = count > 1
    if not several.any():  # one sample per series: nothing to go by
        return np.full(len(times_ns), SNAPSHOT_GAP_NS)
    # A series' rows are in time order: its first and last are its earliest and latest.
    span = times_ns[order[bounds[1:] - 1]] - times_ns[order[bounds[:-1]]]
    node = by_series.keys >> SERIES_BITS
    interval = pd.Series(span[several] / (count[several] - 1))
    per_node = interval.groupby(node[several]).median()
    gap = pd.Series(np.minimum(SNAPSHOT_GAP_NS, per_node.to_numpy() / 2), index=per_node.index)
    # Each series by its node's gap, then each row by its series'.
    return gap.reindex(node, fill_value=SNAPSHOT_GAP_NS).to_numpy()[by_series.code]


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
