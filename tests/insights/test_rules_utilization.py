"""BatchSize and LowGPUUtilization at the edges of their parameters."""

import pytest

from profiler_app.analysis.frames import CPU_UTIL, GPU_MEM_USED_PCT, GPU_UTIL
from profiler_app.insights.pure.rules import params_from_overrides
from profiler_app.insights.pure.rules.base import NONE_RECORDED
from profiler_app.insights.pure.rules.utilization import (
    evaluate_batch_size,
    evaluate_low_gpu_utilization,
)
from tests.insights.series import INTERVAL_NS, T0, job, series

NEEDS = f": {NONE_RECORDED}"  # synthetic collector jobs: samples, but not these


def batch_params(**overrides):
    return params_from_overrides({f"BatchSize_{k}": v for k, v in overrides.items()})["BatchSize"]


def batch_job(n: int, cpu=60.0, gpu=60.0, memory=60.0, cpu_head=(), cpu_tail=()):
    cpu_values = [*cpu_head, *[cpu] * (n - len(cpu_head) - len(cpu_tail)), *cpu_tail]
    return job(
        series(CPU_UTIL, cpu_values, device=0),
        series(CPU_UTIL, cpu_values, device=1),
        series(GPU_UTIL, [gpu] * n),
        series(GPU_MEM_USED_PCT, [memory] * n),
    )


def test_it_finds_a_small_batch_when_all_p95_are_below_70():
    result = evaluate_batch_size(batch_job(501), batch_params())
    assert result.triggered
    assert (result.evaluated, result.trigger_count, result.violations) == (1, 1, 1)
    gpu = result.evidence["nodes"]["algo-1"]["gpus"]["0"]
    assert gpu["window_p95_util"] == gpu["window_p95_memory"] == gpu["window_p95_cpu"] == 60.0
    assert [tuple(r)[:4] for r in result.time_ranges] == [
        (T0 + INTERVAL_NS, T0 + 500 * INTERVAL_NS, "algo-1", 0)
    ]
    assert "batch size" in result.recommendation


def test_it_judges_a_job_shorter_than_the_window_once_over_its_samples():
    result = evaluate_batch_size(batch_job(500), batch_params())
    assert result.triggered and result.evaluated == 1
    assert result.evidence["short_job"]["samples"] == 500
    assert result.recommendation.startswith(
        "Short job: patience=100, window=500 exceeds its data, so this verdict is taken once over "
        "all of the 500 samples it has (patience=0, window=499)."
    )
    assert result.params["window"] == 500  # the job's parameters, as set
    assert evaluate_batch_size(batch_job(500), batch_params(window=499)).triggered
    too_short = evaluate_batch_size(batch_job(9), batch_params())
    assert too_short.not_evaluated_reason == (
        "not evaluated: at most 9 CPU snapshots per node; the rule needs more than window=500 "
        "and patience=100; a shorter job is judged on its own samples from 10 on"
    )


def test_it_does_not_trigger_at_a_p95_of_exactly_70():
    for field in ("cpu", "gpu", "memory"):
        result = evaluate_batch_size(batch_job(501, **{field: 70.0}), batch_params())
        assert result.evaluated == 1
        assert not result.triggered, field


def test_it_looks_only_at_the_trailing_window():
    # A busy CPU at the start falls out of the last 500 snapshots.
    assert evaluate_batch_size(batch_job(800, cpu_head=[100.0] * 300), batch_params()).triggered
    # 26 busy snapshots (over 5 %) inside the window lift its 95th percentile to 100; with 25
    # it interpolates to 62.
    busy_inside = batch_job(526, cpu_tail=[100.0] * 26)
    assert not evaluate_batch_size(busy_inside, batch_params()).triggered
    result = evaluate_batch_size(batch_job(526, cpu_tail=[100.0] * 25), batch_params())
    assert result.triggered
    assert result.evidence["nodes"]["algo-1"]["gpus"]["0"]["window_p95_cpu"] == pytest.approx(62.0)


def test_it_honours_overridden_p95_thresholds():
    data = batch_job(501)
    assert not evaluate_batch_size(data, batch_params(gpu_threshold_p95=60)).triggered
    assert not evaluate_batch_size(data, batch_params(cpu_threshold_p95=60)).triggered
    assert not evaluate_batch_size(data, batch_params(gpu_memory_threshold_p95=60)).triggered
    waiting = evaluate_batch_size(data, batch_params(patience=501))
    assert waiting.triggered and waiting.evidence["short_job"]["samples"] == 501


def test_it_says_why_batch_size_is_not_evaluated():
    no_memory = job(series(CPU_UTIL, [60.0] * 600), series(GPU_UTIL, [60.0] * 600))
    assert evaluate_batch_size(no_memory, batch_params()).not_evaluated_reason == (
        "not evaluated: no samples of the GPU memory in use" + NEEDS
    )
    no_gpu = job(series(CPU_UTIL, [60.0] * 600))
    assert evaluate_batch_size(no_gpu, batch_params()).not_evaluated_reason == (
        "not evaluated: no GPU utilisation samples"
    )


def low_params(**overrides):
    return params_from_overrides({f"LowGPUUtilization_{k}": v for k, v in overrides.items()})[
        "LowGPUUtilization"
    ]


def test_it_finds_an_under_used_gpu():
    result = evaluate_low_gpu_utilization(job(series(GPU_UTIL, [69.0] * 1001)), low_params())
    assert result.triggered
    assert result.evidence["issues"] == ["under-used"]
    gpu = result.evidence["nodes"]["algo-1"]["0"]
    assert (gpu["under_used_scans"], gpu["window_p95"], gpu["unused"]) == (1, 69.0, False)
    assert "under-used" in result.recommendation


def test_it_does_not_flag_a_gpu_at_exactly_threshold_p95():
    result = evaluate_low_gpu_utilization(job(series(GPU_UTIL, [70.0] * 1001)), low_params())
    assert result.evaluated == 1
    assert not result.triggered


def test_it_finds_a_fluctuating_gpu():
    # In the last 500 samples: 30 idle (6 %, so the 5th percentile is 0), the rest at 100.
    values = [100.0] * 521 + [0.0, *[100.0] * 15] * 30
    result = evaluate_low_gpu_utilization(job(series(GPU_UTIL, values)), low_params())
    assert result.triggered
    assert result.evidence["issues"] == ["fluctuating"]
    assert result.evidence["nodes"]["algo-1"]["0"]["window_p5"] == 0.0


def test_it_needs_the_fifth_percentile_strictly_below_threshold_p5():
    def fluctuating(dip: float) -> bool:
        # 30 dips in the last 500 samples: the 5th percentile is the dip's value.
        values = [100.0] * 521 + [dip, *[100.0] * 15] * 30
        result = evaluate_low_gpu_utilization(job(series(GPU_UTIL, values)), low_params())
        assert result.evidence["nodes"]["algo-1"]["0"]["window_p5"] == dip
        return result.triggered

    assert not fluctuating(10.0)
    assert fluctuating(9.9)


def test_it_does_not_flag_dips_below_the_fifth_percentile():
    # 20 idle samples (4 %) in the window: the 5th percentile stays at 100.
    values = [100.0] * 981 + [0.0] * 20
    assert not evaluate_low_gpu_utilization(job(series(GPU_UTIL, values)), low_params()).triggered


def test_it_judges_a_job_within_patience_once_and_says_on_how_many_samples():
    # A 28 s job sampled every 0.5 s: 53 samples per GPU, patience 1000.
    short = job(series(GPU_UTIL, [30.0] * 53))
    result = evaluate_low_gpu_utilization(short, low_params())
    assert result.triggered and result.evaluated == 1 and result.datapoints == 53
    assert result.evidence["short_job"] == {
        "samples": 53,
        "note": "Short job: patience=1000 exceeds its data, so this verdict is taken once over "
        "all of the 53 samples it has (patience=0).",
    }
    assert result.evidence["nodes"]["algo-1"]["0"]["window_p95"] == 30.0
    assert evaluate_low_gpu_utilization(
        job(series(GPU_UTIL, [95.0] * 53)), low_params()
    ).recommendation.endswith("No action needed.")
    result = evaluate_low_gpu_utilization(job(series(GPU_UTIL, [0.0] * 9)), low_params())
    assert result.not_evaluated_reason == (
        "not evaluated: at most 9 GPU utilisation samples per GPU; the rule waits for more "
        "than patience=1000; a shorter job is judged on its own samples from 10 on"
    )
    lowered = evaluate_low_gpu_utilization(
        job(series(GPU_UTIL, [0.0] * 1000)), low_params(patience=999)
    )
    assert lowered.triggered
    assert lowered.evidence["nodes"]["algo-1"]["0"]["unused"]


def test_it_judges_each_gpu_on_its_own():
    data = job(series(GPU_UTIL, [95.0] * 1001, device=0), series(GPU_UTIL, [20.0] * 1001, device=1))
    result = evaluate_low_gpu_utilization(data, low_params())
    assert result.violations == 1
    assert [r.device for r in result.time_ranges] == [1]


def test_it_reports_one_time_range_per_run_of_flagged_scans():
    data = job(series(GPU_UTIL, [30.0] * 2000))
    result = evaluate_low_gpu_utilization(data, low_params(scan_interval_us=50_000_000))
    # Scans at 50, 100, 150 and 200 s; the last two have seen more than 1000 samples.
    assert (result.evaluated, result.trigger_count, result.violations) == (2, 2, 2)
    assert [tuple(r)[:4] for r in result.time_ranges] == [
        (T0 + 1000 * INTERVAL_NS, T0 + 1999 * INTERVAL_NS, "algo-1", 0)
    ]
