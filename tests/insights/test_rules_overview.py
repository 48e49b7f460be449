"""OverallSystemUsage, OverallFrameworkMetrics and the rule parameters."""

import dataclasses
import time
import tracemalloc

import numpy as np
import pytest

from profiler_app.analysis.frames import (
    CPU_UTIL,
    GPU_MEM_USED,
    GPU_UTIL,
    KERNEL_BUSY,
    JobData,
    framework_frame,
)
from profiler_app.insights.pure.rules import RULES, evaluate_rules, params_from_overrides
from profiler_app.insights.pure.rules.base import MAX_SCANS
from profiler_app.insights.pure.rules.overview import (
    evaluate_overall_framework_metrics,
    evaluate_overall_system_usage,
)
from profiler_app.insights.pure.rules.snapshots import snapshot_ids
from tests.insights.series import job, series, steps

# SPEC §4 / SageMaker Debugger's documented parameters and defaults.
DEFAULTS = {
    "BatchSize": {
        "cpu_threshold_p95": 70,
        "gpu_threshold_p95": 70,
        "gpu_memory_threshold_p95": 70,
        "patience": 100,
        "window": 500,
        "scan_interval_us": 60_000_000,
    },
    "CPUBottleneck": {
        "threshold": 50,
        "gpu_threshold": 10,
        "cpu_threshold": 90,
        "patience": 100,
        "scan_interval_us": 60_000_000,
    },
    "GPUMemoryIncrease": {
        "increase": 10,
        "patience": 100,
        "window": 500,
        "scan_interval_us": 60_000_000,
    },
    "IOBottleneck": {
        "threshold": 50,
        "gpu_threshold": 70,
        "io_threshold": 50,
        "patience": 1000,
        "scan_interval_us": 60_000_000,
    },
    "LoadBalancing": {"threshold": 0.5, "patience": 10, "scan_interval_us": 60_000_000},
    "LowGPUUtilization": {
        "threshold_p95": 70,
        "threshold_p5": 10,
        "patience": 1000,
        "window": 500,
        "scan_interval_us": 60_000_000,
    },
    "OverallSystemUsage": {"scan_interval_us": 60_000_000},
    "MaxInitializationTime": {"threshold": 20, "scan_interval_us": 60_000_000},
    "OverallFrameworkMetrics": {"scan_interval_us": 60_000_000},
    "StepOutlier": {"stddev": 5, "mode": None, "n_outliers": 10, "scan_interval_us": 60_000_000},
}


def test_it_has_exactly_the_documented_rules_parameters_and_defaults():
    params = params_from_overrides()
    assert list(RULES) == list(DEFAULTS)
    for rule, defaults in DEFAULTS.items():
        assert dataclasses.asdict(params[rule]) == defaults, rule
        with pytest.raises(dataclasses.FrozenInstanceError):
            params[rule].scan_interval_us = 1


def test_it_applies_profiler_report_style_overrides():
    params = params_from_overrides(
        {
            "CPUBottleneck_cpu_threshold": "95",
            "IOBottleneck_threshold": 90.5,
            "StepOutlier_mode": "eval",
        }
    )
    assert params["CPUBottleneck"].cpu_threshold == 95.0
    assert params["IOBottleneck"].threshold == 90.5
    assert params["StepOutlier"].mode == "EVAL"
    assert params["BatchSize"] == RULES["BatchSize"].params()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"Nope_threshold": 1}, "Nope_threshold: unknown rule or analysis 'Nope'"),
        ({"CPUBottleneck_nope": 1}, "CPUBottleneck_nope: CPUBottleneck has no parameter 'nope'"),
        ({"BatchSize_window": 2.5}, "BatchSize_window must be a whole number"),
        ({"BatchSize_window": 0}, "BatchSize_window must be at least 1"),
        ({"CPUBottleneck_patience": -1}, "CPUBottleneck_patience must not be negative"),
        ({"CPUBottleneck_cpu_threshold": 101}, "CPUBottleneck_cpu_threshold is a percentage"),
        ({"CPUBottleneck_threshold": "lots"}, "CPUBottleneck_threshold must be a number"),
        ({"StepOutlier_mode": "test"}, "StepOutlier_mode must be TRAIN, EVAL or empty"),
    ],
)
def test_it_refuses_bad_overrides_by_name(overrides, message):
    with pytest.raises(ValueError, match=message):
        params_from_overrides(overrides)


def test_it_summarises_system_usage_per_node():
    data = job(
        series(GPU_UTIL, np.arange(101.0), device=0),
        series(GPU_UTIL, np.zeros(101), device=1),
        series(CPU_UTIL, np.full(101, 40.0), device=0),
        series(GPU_MEM_USED, np.full(101, 2.0e9), device=0),
        series(GPU_MEM_USED, np.full(101, 3.0e9), device=1),
    )
    result = evaluate_overall_system_usage(data, params_from_overrides()["OverallSystemUsage"])
    assert not result.triggered
    assert result.evaluated == 1
    node = result.evidence["nodes"]["algo-1"]
    # The node's GPU utilisation per snapshot is the mean over its GPUs: 0, 0.5, ..., 50.
    assert node[GPU_UTIL] == {"min": 0.0, "p50": 25.0, "p95": 47.5, "p99": 49.5, "max": 50.0}
    assert node[GPU_MEM_USED]["p50"] == 5.0e9  # memory in use adds up over the GPUs
    assert result.evidence["gpus"]["algo-1 GPU 0"]["max"] == 100.0
    assert "lightly used" in result.recommendation


def test_it_summarises_framework_time():
    frame = framework_frame(
        ["conv", "matmul_kernel", "## forward ##", "## backward ##", "DataLoader"],
        ["cpu", "gpu", "forward", "backward", "dataloader"],
        [30, 70, 200, 500, 300],
    )
    data = JobData(job().metrics, steps([10, 20], mode="TRAIN"), frame)
    result = evaluate_overall_framework_metrics(
        data, params_from_overrides()["OverallFrameworkMetrics"]
    )
    phases = result.evidence["phases"]
    assert phases["cpu"] == {"total_ns": 30, "pct": 30.0}
    assert phases["gpu"]["pct"] == 70.0
    assert phases["backward"] == {"total_ns": 500, "pct": 50.0}
    assert result.evidence["forward_backward"] == {"forward_pct": 200 / 7, "backward_pct": 500 / 7}
    assert result.evidence["step_modes"]["TRAIN"] == {"total_ns": 30, "pct": 100.0}
    assert result.recommendation.startswith("Most framework time is in backward (50%)")
    # 30 % of the annotations is no share of the steps: data loading is DataLoading's to judge.
    assert "Data loading" not in result.recommendation


def test_it_says_why_summaries_are_not_evaluated():
    empty = JobData.empty()
    params = params_from_overrides()
    assert evaluate_overall_system_usage(empty, params["OverallSystemUsage"]).not_evaluated_reason
    results = {r.rule: r for r in evaluate_rules(empty)}
    assert all(not r.triggered and r.not_evaluated_reason for r in results.values())
    assert results["OverallFrameworkMetrics"].not_evaluated_reason == (
        "not evaluated: no framework events (annotations, operators, kernels)"
    )


def test_it_scans_data_recorded_years_apart_in_bounded_time_and_memory():
    """Traces recorded years apart, uploaded as ranks of one job, span millions of scan
    intervals: the rules scan at a longer interval instead (they took gigabytes)."""
    years_ns = 20 * 365 * 24 * 3600 * 10**9
    data = job(
        *(series(metric, [30.0] * 1200, device=0) for metric in (GPU_UTIL, CPU_UTIL)),
        *(
            series(metric, [30.0] * 1200, device=1, offset_ns=years_ns)
            for metric in (GPU_UTIL, CPU_UTIL)
        ),
        series(GPU_MEM_USED, [1.0] * 1200, device=1, offset_ns=years_ns),
    )
    tracemalloc.start()
    started = time.perf_counter()
    try:
        results = {r.rule: r for r in evaluate_rules(data)}
        peak_bytes = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 10
    assert peak_bytes < 200 << 20
    assert results["LowGPUUtilization"].evaluated == MAX_SCANS + 1
    assert results["LowGPUUtilization"].triggered


def test_its_percentiles_are_of_the_millisecond_points_not_of_one_mean():
    # Kernel busy time in 1 ms buckets on two GPUs: busy (100 %) 4 ms out of 5, idle the rest.
    rng = np.random.default_rng(3)
    ms = 1_000_000
    gpu0 = np.tile([100.0, 100.0, 100.0, 100.0, 0.0], 400)
    gpu1 = rng.uniform(0, 100, len(gpu0))
    data = job(
        series(GPU_UTIL, gpu0, device=0, interval_ns=ms),
        series(GPU_UTIL, gpu1, device=1, interval_ns=ms),
        gpu_util_source=KERNEL_BUSY,
    )
    result = evaluate_overall_system_usage(data, params_from_overrides()["OverallSystemUsage"])
    node = result.evidence["nodes"]["algo-1"][GPU_UTIL]
    per_ms = (gpu0 + gpu1) / 2  # one node value per 1 ms point, the mean over its GPUs
    assert result.datapoints == len(per_ms)
    for name, q in (("p50", 50), ("p95", 95), ("p99", 99)):
        assert node[name] == pytest.approx(float(np.percentile(per_ms, q)))
    assert (node["min"], node["max"]) == (per_ms.min(), per_ms.max())
    assert result.evidence["gpus"]["algo-1 GPU 0"]["p95"] == 100.0
    assert node["p95"] > 70 and "lightly used" not in result.recommendation


def test_a_rule_that_cannot_read_the_data_says_so_instead_of_raising():
    def confused(job, params):
        return None + 1  # what a trace from another tool once caused: a raw TypeError

    spec = dataclasses.replace(RULES["OverallSystemUsage"], evaluate=confused)
    found = spec.judge(JobData.empty(), params_from_overrides()["OverallSystemUsage"])
    assert not found.triggered and found.evaluated == 0
    assert found.not_evaluated_reason == (
        "not evaluated: this data has a shape the rule cannot read (a trace from another tool, "
        "or one it was not written for); the other rules are unaffected, and the worker's log "
        "has the details"
    )
    assert "TypeError" not in found.not_evaluated_reason


def test_a_sample_taken_as_the_job_ends_is_a_snapshot_of_its_own():
    """The collector samples once more as the job ends, here 6 ms after the last of 20 rounds
    100 ms apart: one snapshot of both averaged two CPU readings and counted the GPU memory in
    use twice."""
    last = 19 * 100_000_000 + 6_000_000

    def rounds(metric, values, device=0):
        return series(metric, values[:20], device=device), series(
            metric, values[20:], device=device, offset_ns=last
        )

    data = job(
        *rounds(CPU_UTIL, [40.0] * 20 + [0.0]),
        *rounds(GPU_MEM_USED, [2.0e9] * 21),
        *rounds(GPU_MEM_USED, [3.0e9] * 21, device=1),
    )
    result = evaluate_overall_system_usage(data, params_from_overrides()["OverallSystemUsage"])
    node = result.evidence["nodes"]["algo-1"]
    assert result.datapoints == 2 * 21
    assert (node[GPU_MEM_USED]["min"], node[GPU_MEM_USED]["max"]) == (5.0e9, 5.0e9)
    assert (node[CPU_UTIL]["min"], node[CPU_UTIL]["max"]) == (0.0, 40.0)


def test_a_series_at_one_instant_twice_stays_one_snapshot():
    """Two ranks' traces may give one GPU's kernel busy points at the same instants."""
    times = np.array([0, 0, 10, 10, 20, 20]) * 1_000_000
    nodes = np.zeros(6, dtype=np.int64)
    assert snapshot_ids(nodes, times, np.zeros(6, dtype=np.int64)).tolist() == [0, 0, 1, 1, 2, 2]


def test_a_whole_host_series_sets_its_own_nodes_snapshot_gap():
    """Series -1 (a whole-host metric) once lent its interval to the node before: node 1's
    1 ms points fell into 20 ms snapshots, node 0's 100 ms ones were judged 1 ms apart."""
    ms = 1_000_000
    nodes = np.r_[np.zeros(3, dtype=np.int64), np.ones(40, dtype=np.int64)]
    times = np.r_[np.arange(3) * 100 * ms, np.arange(40) * ms]
    series_ = np.r_[np.zeros(3, dtype=np.int64), np.full(40, -1, dtype=np.int64)]
    snap = snapshot_ids(nodes, times, series_)
    assert snap.tolist() == list(range(43))


@pytest.mark.parametrize(
    ("gpu", "cpu", "advice"),
    [
        (70.0, 90.0, []),
        (69.9, 90.0, ["lightly used (95th percentile 70%)"]),
        (70.0, 90.1, ["nearly saturated (95th percentile 90%)"]),
    ],
)
def test_its_advice_starts_just_past_its_thresholds(gpu, cpu, advice):
    data = job(series(GPU_UTIL, [gpu] * 50), series(CPU_UTIL, [cpu] * 50))
    result = evaluate_overall_system_usage(data, params_from_overrides()["OverallSystemUsage"])
    found = [part for part in advice if part in result.recommendation]
    assert found == advice
    if not advice:
        assert result.recommendation == "System usage shows no obvious waste; see the other rules."
