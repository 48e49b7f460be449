"""GPUMemoryIncrease and LoadBalancing at the edges of their parameters."""

import math

import numpy as np
import pytest

from profiler_app.analysis.frames import GPU_MEM_USED_PCT, GPU_UTIL
from profiler_app.insights.pure.rules import params_from_overrides
from profiler_app.insights.pure.rules.memory_balance import (
    evaluate_gpu_memory_increase,
    evaluate_load_balancing,
    js_distances,
)
from tests.insights.series import INTERVAL_NS, T0, job, series


def memory_params(**overrides):
    return params_from_overrides({f"GPUMemoryIncrease_{k}": v for k, v in overrides.items()})[
        "GPUMemoryIncrease"
    ]


def test_it_finds_memory_that_grew_by_more_than_increase_points():
    data = job(series(GPU_MEM_USED_PCT, [20.0] * 500 + [30.5] * 500))
    result = evaluate_gpu_memory_increase(data, memory_params())
    assert result.triggered
    assert result.violations == 1  # one episode
    assert result.evidence["nodes"]["algo-1"]["0"]["max_increase"] == 10.5
    # The two windows compared: samples 0-499 and 500-999.
    assert [tuple(r)[:4] for r in result.time_ranges] == [(T0, T0 + 999 * INTERVAL_NS, "algo-1", 0)]
    assert ".detach()" in result.recommendation


def test_it_does_not_flag_growth_of_exactly_increase_points():
    data = job(series(GPU_MEM_USED_PCT, [20.0] * 500 + [30.0] * 500))
    result = evaluate_gpu_memory_increase(data, memory_params())
    assert (result.evaluated, result.triggered) == (1, False)


def test_a_job_shorter_than_two_windows_is_judged_on_two_halves_of_its_samples():
    data = job(series(GPU_MEM_USED_PCT, [20.0] * 500 + [90.0] * 499))
    result = evaluate_gpu_memory_increase(data, memory_params())
    assert result.triggered and result.evidence["short_job"]["samples"] == 999
    assert "(patience=0, window=499)" in result.evidence["short_job"]["note"]
    # The last 499 samples (all 90 %) against the 499 before them (all 20 %).
    assert result.evidence["nodes"]["algo-1"]["0"]["max_increase"] == pytest.approx(70.0)
    assert evaluate_gpu_memory_increase(data, memory_params(window=499)).triggered
    flat = job(series(GPU_MEM_USED_PCT, [20.0] * 53))
    assert not evaluate_gpu_memory_increase(flat, memory_params()).triggered
    tiny = evaluate_gpu_memory_increase(job(series(GPU_MEM_USED_PCT, [20.0] * 9)), memory_params())
    assert tiny.not_evaluated_reason == (
        "not evaluated: at most 9 GPU memory samples per GPU; the rule needs two windows "
        "(2 x window=500) and more than patience=100; a shorter job is judged on its own "
        "samples from 10 on"
    )


def test_it_ignores_growth_before_patience_runs_out():
    data = job(series(GPU_MEM_USED_PCT, [10.0] * 10 + [50.0] * 10))
    assert evaluate_gpu_memory_increase(data, memory_params(window=10, patience=19)).triggered
    longer = job(series(GPU_MEM_USED_PCT, [10.0] * 10 + [50.0] * 10 + [50.0] * 30))
    waiting = evaluate_gpu_memory_increase(longer, memory_params(window=10, patience=30))
    assert not waiting.triggered and waiting.not_evaluated_reason is None


def test_it_does_not_flag_slow_growth_spread_over_the_windows():
    # 35 points over 6000 samples: 2.9 points between consecutive windows of 500.
    data = job(series(GPU_MEM_USED_PCT, np.linspace(5, 40, 6000)))
    result = evaluate_gpu_memory_increase(data, memory_params())
    assert not result.triggered
    assert result.evidence["nodes"]["algo-1"]["0"]["max_increase"] == pytest.approx(35 * 500 / 5999)


def balance_params(**overrides):
    return params_from_overrides({f"LoadBalancing_{k}": v for k, v in overrides.items()})[
        "LoadBalancing"
    ]


def test_it_measures_jensen_shannon_distance():
    probs = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    distances = js_distances(probs)
    assert distances[0, 1] == pytest.approx(math.sqrt(math.log(2)))
    assert distances[0, 0] == 0.0
    # p=(1,0), q=(.5,.5): m=(.75,.25); JS = (ln(4/3) + .5 ln(2/3) + .5 ln 2) / 2
    expected = (math.log(4 / 3) + 0.5 * math.log(2 / 3) + 0.5 * math.log(2)) / 2
    assert distances[0, 2] == pytest.approx(math.sqrt(expected))


def test_it_finds_gpus_with_different_workloads():
    data = job(series(GPU_UTIL, [5.0] * 11, device=0), series(GPU_UTIL, [95.0] * 11, device=1))
    result = evaluate_load_balancing(data, balance_params())
    assert result.triggered
    assert result.evidence["max_distance"] == pytest.approx(math.sqrt(math.log(2)))
    assert result.evidence["pairs"] == [
        {"a": "algo-1 GPU 0", "b": "algo-1 GPU 1", "distance": pytest.approx(0.8325546)}
    ]
    assert [r.device for r in result.time_ranges] == [0, 1]
    assert "DistributedSampler" in result.recommendation


def test_it_compares_gpus_of_different_nodes():
    data = job(series(GPU_UTIL, [5.0] * 11), series(GPU_UTIL, [95.0] * 11, node="algo-2"))
    result = evaluate_load_balancing(data, balance_params())
    assert result.evidence["pairs"][0]["b"] == "algo-2 GPU 0"


def test_it_triggers_only_above_the_distance_threshold():
    data = job(series(GPU_UTIL, [5.0] * 11, device=0), series(GPU_UTIL, [95.0] * 11, device=1))
    assert not evaluate_load_balancing(data, balance_params(threshold=0.8326)).triggered
    assert evaluate_load_balancing(data, balance_params(threshold=0.8325)).triggered


def test_it_does_not_flag_gpus_with_the_same_workload():
    values = [10.0, 50.0, 90.0] * 10
    data = job(series(GPU_UTIL, values, device=0), series(GPU_UTIL, values[::-1], device=1))
    result = evaluate_load_balancing(data, balance_params())
    assert (result.evaluated, result.triggered, result.evidence["max_distance"]) == (1, False, 0.0)


def test_it_waits_for_more_than_patience_samples_on_two_gpus():
    data = job(series(GPU_UTIL, [5.0] * 10, device=0), series(GPU_UTIL, [95.0] * 11, device=1))
    assert evaluate_load_balancing(data, balance_params()).not_evaluated_reason == (
        "not evaluated: fewer than two GPUs have more than patience=10 samples"
    )
    one_gpu = job(series(GPU_UTIL, [5.0] * 100))
    assert evaluate_load_balancing(one_gpu, balance_params()).not_evaluated_reason == (
        "not evaluated: only one GPU has utilisation samples"
    )
