"""GPUMemoryIncrease (memory use keeps growing) and LoadBalancing (GPUs do unequal work)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from profiler_app.analysis.frames import GPU_MEM_USED_PCT, GPU_UTIL, JobData
from profiler_app.insights.pure.rules.base import (
    DEFAULT_SCAN_INTERVAL_US,
    NO_ACTION,
    RuleParams,
    RuleResult,
    RuleSpec,
    TimeRange,
    gpu_patience,
    gpu_source_label,
    job_scans,
    lacking,
    longest,
    not_evaluated,
    per_series,
    percentiles,
    result,
    runs,
    short_job_verdict,
)

# Utilisation histograms have 2-percent-point bins, as in SageMaker's rule.
HISTOGRAM_BINS = 50
# The report names at most this many GPU pairs.
MAX_PAIRS = 20


@dataclass(frozen=True)
class GPUMemoryIncreaseParams(RuleParams):
    increase: float = 10
    patience: int = 100
    window: int = 500
    scan_interval_us: int = DEFAULT_SCAN_INTERVAL_US


@dataclass(frozen=True)
class LoadBalancingParams(RuleParams):
    threshold: float = 0.5
    patience: int = 10
    scan_interval_us: int = DEFAULT_SCAN_INTERVAL_US


MEMORY_ADVICE = (
    "GPU memory use grows during training. Look for tensors kept alive across steps (losses or "
    "outputs accumulated without .detach()/.item(), growing caches, lists of tensors), and for "
    "input shapes that grow. If the growth is expected, make sure the largest batch still fits."
)
BALANCE_ADVICE = (
    "Work is spread unevenly over the GPUs. Check that every rank gets the same amount of data "
    "(data set sharding, DistributedSampler, uneven last batches), that pipeline or model-parallel "
    "stages are balanced, and that no GPU is shared with another process."
)


def evaluate_gpu_memory_increase(job: JobData, params: GPUMemoryIncreaseParams) -> RuleResult:
    """Mean of the last ``window`` samples vs the mean of the ``window`` samples before them."""
    rule = "GPUMemoryIncrease"
    if not job.has_metric(GPU_MEM_USED_PCT):
        return not_evaluated(rule, params, lacking(job, "samples of the GPU memory in use"))
    boundaries = job_scans(job, job.samples.time_ns, params.scan_interval_us)
    evaluated = np.zeros(len(boundaries), dtype=bool)
    triggered = np.zeros(len(boundaries), dtype=bool)
    episodes = 0
    ranges: list[TimeRange] = []
    gpus: dict = {}
    w = params.window
    datapoints = 0
    for (node, gpu), times, values in per_series(job, GPU_MEM_USED_PCT):
        datapoints = max(datapoints, len(values))
        newest = np.arange(2 * w - 1, len(values))
        newest = newest[newest + 1 > params.patience]
        if len(newest) == 0:
            continue
        total = np.concatenate(([0.0], np.cumsum(values)))
        recent = (total[newest + 1] - total[newest + 1 - w]) / w
        before = (total[newest + 1 - w] - total[newest + 1 - 2 * w]) / w
        growth = recent - before
        grew = growth > params.increase
        evaluated |= boundaries > times[newest[0]]
        scan_of = np.searchsorted(boundaries, times[newest[grew]], side="right")
        triggered[scan_of[scan_of < len(boundaries)]] = True
        firsts, lasts = runs(grew)
        episodes += len(firsts)
        ranges += [
            TimeRange(int(times[newest[a] - 2 * w + 1]), int(times[newest[b]]), node, gpu)
            for a, b in zip(firsts, lasts, strict=True)
        ]
        gpus.setdefault(node, {})[str(gpu)] = {
            "max_increase": float(growth.max()),
            "episodes": len(firsts),
            **percentiles(values),
        }

    if not evaluated.any():
        return short_job_verdict(
            evaluate_gpu_memory_increase,
            job,
            params,
            datapoints,
            f"at most {datapoints} GPU memory samples per GPU; the rule needs two windows "
            f"(2 x window={w}) and more than patience={params.patience}",
            patience=0,
            window=max(min(w, datapoints // 2), 1),
        )
    return result(
        rule,
        params,
        evaluated=int(evaluated.sum()),
        trigger_count=int(triggered.sum()),
        violations=episodes,
        datapoints=datapoints,
        evidence={"increase_threshold": params.increase, "nodes": gpus},
        time_ranges=longest(ranges),
        recommendation=MEMORY_ADVICE if triggered.any() else NO_ACTION,
    )


def js_distances(probs: np.ndarray) -> np.ndarray:
    """Jensen-Shannon distance (natural log) between every pair of rows of ``probs``."""
    mix = (probs[:, None, :] + probs[None, :, :]) / 2

    def kl_to_mix(p: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(p > 0, p * np.log(p / mix), 0.0)
        return terms.sum(axis=2)

    divergence = (kl_to_mix(probs[:, None, :]) + kl_to_mix(probs[None, :, :])) / 2
    return np.sqrt(np.maximum(divergence, 0.0))


def evaluate_load_balancing(job: JobData, params: LoadBalancingParams) -> RuleResult:
    """Distance between the utilisation histograms of every pair of GPUs of the job."""
    rule = "LoadBalancing"
    if not job.has_metric(GPU_UTIL):
        return not_evaluated(rule, params, "no GPU utilisation samples")
    boundaries = job_scans(job, job.samples.time_ns, params.scan_interval_us)
    keys, spans, means, cumulative = _utilisation_histograms(job, boundaries)
    if len(keys) < 2:
        return not_evaluated(rule, params, "only one GPU has utilisation samples")
    patience = gpu_patience(job, params.patience)
    seen = cumulative.sum(axis=2)
    evaluated = triggered = 0
    distances = np.zeros((0, 0))
    compared = np.zeros(0, dtype=np.int64)
    for k in range(len(boundaries)):
        ready = np.flatnonzero(seen[:, k] > patience)
        if len(ready) < 2:
            continue
        probs = cumulative[ready, k] / seen[ready, k][:, None]
        distances, compared = js_distances(probs), ready
        evaluated += 1
        triggered += bool((np.triu(distances, 1) > params.threshold).any())

    datapoints = int(seen[:, -1].max())
    if not evaluated:
        return not_evaluated(
            rule,
            params,
            f"fewer than two GPUs have more than patience={patience} samples",
            datapoints,
        )
    evidence, over, involved = _pairs_evidence(
        job, keys, means, cumulative, compared, distances, params.threshold
    )
    return result(
        rule,
        params,
        evaluated=evaluated,
        trigger_count=triggered,
        violations=len(over),
        datapoints=datapoints,
        evidence=evidence,
        time_ranges=longest(
            TimeRange(spans[g][0], spans[g][1], keys[g][0], keys[g][1]) for g in involved
        ),
        recommendation=BALANCE_ADVICE if triggered else NO_ACTION,
    )


def _pairs_evidence(
    job: JobData,
    keys: list[tuple[str, int]],
    means: list[float],
    cumulative: np.ndarray,
    compared: np.ndarray,
    distances: np.ndarray,
    threshold: float,
) -> tuple[dict[str, Any], np.ndarray, list[int]]:
    """The evidence of the last scan's pairs: the worst pairs over ``threshold``, every GPU's
    histogram; the pairs over it, and the GPUs the worst pairs involve."""
    first, second = np.triu_indices(len(compared), 1)
    pair_distance = distances[first, second]
    over = np.flatnonzero(pair_distance > threshold)
    worst = over[np.argsort(pair_distance[over])[::-1]][:MAX_PAIRS]

    def label(i: int) -> str:
        node, gpu = keys[compared[i]]
        return f"{node} GPU {gpu}"

    involved = sorted({int(compared[i]) for i in np.concatenate((first[worst], second[worst]))})
    evidence = {
        "source": gpu_source_label(job),
        "max_distance": float(pair_distance.max()),
        "pairs_over_threshold": len(over),
        "pairs": [
            {"a": label(first[i]), "b": label(second[i]), "distance": pair_distance[i]}
            for i in worst
        ],
        "gpus": {
            f"{node} GPU {gpu}": {
                "histogram": cumulative[g, -1],
                "mean_util_pct": means[g],
            }
            for g, (node, gpu) in enumerate(keys)
        },
    }
    return evidence, over, involved


def _utilisation_histograms(
    job: JobData, boundaries: np.ndarray
) -> tuple[list[tuple[str, int]], list[tuple[int, int]], list[float], np.ndarray]:
    """Per GPU: its (node, GPU), the span and mean of its utilisation samples, and their
    histogram (2 % bins) cumulated scan by scan: an array (gpu, scan, bin)."""
    n_scans = len(boundaries)
    keys, spans, means, histograms = [], [], [], []
    for key, times, values in per_series(job, GPU_UTIL):
        bins = np.clip((values // 2).astype(np.int64), 0, HISTOGRAM_BINS - 1)
        scan = np.minimum(np.searchsorted(boundaries, times, side="right"), n_scans - 1)
        counts = np.bincount(scan * HISTOGRAM_BINS + bins, minlength=n_scans * HISTOGRAM_BINS)
        histograms.append(counts.reshape(n_scans, HISTOGRAM_BINS).cumsum(axis=0))
        keys.append(key)
        spans.append((int(times[0]), int(times[-1])))
        means.append(float(values.mean()))
    cumulative = np.stack(histograms) if histograms else np.zeros((0, n_scans, HISTOGRAM_BINS))
    return keys, spans, means, cumulative


GPU_MEMORY_INCREASE = RuleSpec(
    "GPUMemoryIncrease",
    GPUMemoryIncreaseParams,
    evaluate_gpu_memory_increase,
    "The share of GPU memory in use, averaged over the last window samples, exceeds the average of the "
    "window before it by more than increase percentage points.",
)
LOAD_BALANCING = RuleSpec(
    "LoadBalancing",
    LoadBalancingParams,
    evaluate_load_balancing,
    "The Jensen-Shannon distance between the utilisation histograms of two GPUs exceeds threshold.",
)
