"""CPUBottleneck and IOBottleneck at the edges of their parameters."""

from profiler_app.analysis.frames import CPU_IOWAIT, CPU_UTIL, CPU_UTIL_TOTAL, GPU_UTIL
from profiler_app.insights.pure.rules import params_from_overrides
from profiler_app.insights.pure.rules.base import NONE_RECORDED
from profiler_app.insights.pure.rules.bottlenecks import (
    evaluate_cpu_bottleneck,
    evaluate_io_bottleneck,
)
from tests.insights.series import INTERVAL_NS, T0, job, series

NEEDS = f": {NONE_RECORDED}"  # synthetic collector jobs: samples, but not these


def cpu_job(bottlenecks: int, total: int, gpu_low=5.0, cpu_high=95.0):
    """``total`` snapshots, the first ``bottlenecks`` with the GPU idle and the CPU busy."""
    gpu = [gpu_low] * bottlenecks + [50.0] * (total - bottlenecks)
    cpu = [cpu_high] * bottlenecks + [50.0] * (total - bottlenecks)
    return job(series(GPU_UTIL, gpu), series(CPU_UTIL, cpu, offset_ns=1_000_000))


def cpu_params(**overrides):
    return params_from_overrides({f"CPUBottleneck_{k}": v for k, v in overrides.items()})[
        "CPUBottleneck"
    ]


def test_it_triggers_when_bottlenecks_exceed_the_threshold_share():
    result = evaluate_cpu_bottleneck(cpu_job(102, 202), cpu_params())
    assert result.triggered
    assert (result.evaluated, result.trigger_count) == (1, 1)
    assert (result.violations, result.datapoints) == (102, 202)
    assert result.evidence["bottleneck_pct"] == 100 * 102 / 202
    assert result.not_evaluated_reason is None
    assert "DataLoader" in result.recommendation


def test_it_does_not_trigger_at_exactly_the_threshold_share():
    result = evaluate_cpu_bottleneck(cpu_job(101, 202), cpu_params())
    assert result.evidence["bottleneck_pct"] == 50.0
    assert not result.triggered
    assert result.evaluated == 1
    assert result.recommendation == "No action needed."


def test_it_judges_a_job_within_patience_once_over_its_snapshots():
    assert (
        evaluate_cpu_bottleneck(cpu_job(101, 101), cpu_params()).evidence.get("short_job") is None
    )
    short = evaluate_cpu_bottleneck(cpu_job(27, 53), cpu_params())  # 50.9 % of 53 snapshots
    assert short.triggered and short.evaluated == 1
    assert short.evidence["short_job"]["samples"] == 53
    assert (short.evidence["bottlenecks"], short.evidence["datapoints"]) == (27, 53)
    assert not evaluate_cpu_bottleneck(cpu_job(26, 53), cpu_params()).triggered  # 49.1 %
    waiting = evaluate_cpu_bottleneck(cpu_job(9, 9), cpu_params())
    assert not waiting.triggered
    assert waiting.evaluated == 0
    assert waiting.not_evaluated_reason == (
        "not evaluated: 9 snapshots with both GPU and CPU utilisation samples; the rule "
        "waits for more than patience=100; a shorter job is judged on its own samples from 10 on"
    )


def test_it_needs_the_gpu_strictly_below_and_the_cpu_strictly_above_their_thresholds():
    assert not evaluate_cpu_bottleneck(cpu_job(202, 202, gpu_low=10.0), cpu_params()).triggered
    assert not evaluate_cpu_bottleneck(cpu_job(202, 202, cpu_high=90.0), cpu_params()).triggered
    assert evaluate_cpu_bottleneck(cpu_job(202, 202, 9.9, 90.1), cpu_params()).triggered


def test_it_honours_overridden_thresholds():
    data = cpu_job(102, 202)
    assert not evaluate_cpu_bottleneck(data, cpu_params(threshold=60)).triggered
    assert not evaluate_cpu_bottleneck(data, cpu_params(gpu_threshold=5)).triggered
    assert not evaluate_cpu_bottleneck(data, cpu_params(cpu_threshold=95)).triggered
    # Past the job's data, patience waits no more: one verdict over its 202 snapshots.
    assert evaluate_cpu_bottleneck(data, cpu_params(patience=202)).evidence["short_job"]


def test_it_counts_one_busy_core_as_a_busy_cpu():
    data = job(
        series(GPU_UTIL, [5.0] * 150),
        series(CPU_UTIL, [99.0] * 150, device=0),
        series(CPU_UTIL, [1.0] * 150, device=1),
    )
    assert evaluate_cpu_bottleneck(data, cpu_params()).triggered


def test_it_falls_back_on_the_node_total_cpu():
    data = job(series(GPU_UTIL, [5.0] * 150), series(CPU_UTIL_TOTAL, [95.0] * 150, device=-1))
    assert evaluate_cpu_bottleneck(data, cpu_params()).triggered


def test_it_evaluates_once_per_scan_interval():
    # 302 snapshots 100 ms apart, scans every 10 s: 4 scans (at 10, 20, 30 and 40 s); only the
    # last three have seen more than 100 snapshots, and the bottlenecks stop at 200.
    data = cpu_job(200, 302)
    result = evaluate_cpu_bottleneck(data, cpu_params(scan_interval_us=10_000_000))
    assert result.evaluated == 3
    # At 20 s: 200/200 bottlenecks; at 30 s: 200/300 (66.7 %); at 40 s: 200/302 (66.2 %).
    assert result.trigger_count == 3
    assert result.evidence["bottleneck_pct_per_scan"] == [100.0, 200 / 3, 100 * 200 / 302]


def test_it_reports_the_bottleneck_time_range_of_each_node():
    data = job(
        series(GPU_UTIL, [5.0] * 120 + [50.0] * 30),
        series(CPU_UTIL, [95.0] * 150, offset_ns=1_000_000),
        series(GPU_UTIL, [50.0] * 150, node="algo-2"),
        series(CPU_UTIL, [95.0] * 150, node="algo-2"),
    )
    result = evaluate_cpu_bottleneck(data, cpu_params(threshold=30))
    assert result.triggered
    assert result.evidence["nodes"] == {
        "algo-1": {"datapoints": 150, "bottlenecks": 120},
        "algo-2": {"datapoints": 150, "bottlenecks": 0},
    }
    # Snapshot 0 to snapshot 120 (where the first normal one starts).
    assert [tuple(r)[:4] for r in result.time_ranges] == [
        (T0, T0 + 120 * INTERVAL_NS, "algo-1", -1)
    ]


def test_it_is_not_evaluated_without_gpu_or_cpu_samples():
    no_gpu = job(series(CPU_UTIL, [95.0] * 200))
    no_cpu = job(series(GPU_UTIL, [5.0] * 200))
    assert evaluate_cpu_bottleneck(no_gpu, cpu_params()).not_evaluated_reason == (
        "not evaluated: no GPU utilisation samples"
    )
    result = evaluate_cpu_bottleneck(no_cpu, cpu_params())
    assert result.not_evaluated_reason == "not evaluated: no CPU utilisation samples" + NEEDS
    assert not result.triggered


def io_params(**overrides):
    return params_from_overrides({f"IOBottleneck_{k}": v for k, v in overrides.items()})[
        "IOBottleneck"
    ]


def io_job(bottlenecks: int, total: int, gpu_low=69.0, io_high=51.0):
    gpu = [gpu_low] * bottlenecks + [90.0] * (total - bottlenecks)
    io = [io_high] * bottlenecks + [0.0] * (total - bottlenecks)
    return job(series(GPU_UTIL, gpu), series(CPU_IOWAIT, io, device=-1))


def test_it_triggers_io_bottleneck_past_its_defaults():
    result = evaluate_io_bottleneck(io_job(501, 1001), io_params())
    assert result.triggered
    assert (result.violations, result.datapoints) == (501, 1001)
    assert "storage" in result.recommendation


def test_it_does_not_trigger_io_bottleneck_at_its_boundaries():
    assert not evaluate_io_bottleneck(io_job(500, 1000), io_params()).triggered  # 50 %
    assert evaluate_io_bottleneck(io_job(1000, 1000), io_params()).evidence["short_job"]
    assert not evaluate_io_bottleneck(io_job(1001, 1001, gpu_low=70.0), io_params()).triggered
    assert not evaluate_io_bottleneck(io_job(1001, 1001, io_high=50.0), io_params()).triggered


def test_it_is_not_evaluated_without_io_wait_samples():
    data = job(series(GPU_UTIL, [5.0] * 2000))
    assert evaluate_io_bottleneck(data, io_params()).not_evaluated_reason == (
        "not evaluated: no I/O wait samples" + NEEDS
    )
