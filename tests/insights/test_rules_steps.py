"""StepOutlier and MaxInitializationTime at the edges of their parameters."""

import numpy as np
import pandas as pd

from profiler_app.analysis.frames import GPU_UTIL
from profiler_app.insights.pure.rules import params_from_overrides
from profiler_app.insights.pure.rules.steps import (
    evaluate_max_initialization_time,
    evaluate_step_outlier,
)
from tests.insights.series import T0, job, series, steps

MS = 1_000_000
MINUTE = 60_000_000_000


def outlier_params(**overrides):
    return params_from_overrides({f"StepOutlier_{k}": v for k, v in overrides.items()})[
        "StepOutlier"
    ]


def durations(normal: int, outliers: int) -> list[int]:
    """``normal`` steps of 99 or 101 ms and ``outliers`` steps of 200 ms (over 9 sigma)."""
    return [100 * MS + (MS if i % 2 else -MS) for i in range(normal)] + [200 * MS] * outliers


def test_it_triggers_past_n_outliers_steps():
    result = evaluate_step_outlier(job(steps=steps(durations(1000, 11))), outlier_params())
    assert result.triggered
    assert result.violations == 11
    group = result.evidence["groups"]["algo-1 rank 0 TRAIN"]
    assert group["outliers"] == 11
    assert [s["step"] for s in group["outlier_steps"]] == list(range(1000, 1011))
    assert len(result.time_ranges) == 11
    assert (result.time_ranges[0].rank, result.time_ranges[0].device) == (0, -1)
    values = np.array(durations(1000, 11), dtype=float)
    assert group["stats"]["mean_ns"] == values.mean()
    assert group["stats"]["std_ns"] == values.std()


def test_it_does_not_trigger_at_exactly_n_outliers():
    result = evaluate_step_outlier(job(steps=steps(durations(1000, 10))), outlier_params())
    assert result.violations == 10
    assert not result.triggered
    assert result.evaluated == 2  # the steps last 101 s: scans at 60 s and 120 s


def test_it_honours_stddev_and_n_outliers_overrides():
    data = job(steps=steps(durations(1000, 11)))
    assert not evaluate_step_outlier(data, outlier_params(n_outliers=11)).triggered
    assert not evaluate_step_outlier(data, outlier_params(stddev=10)).triggered
    # At 1 sigma the normal steps (1 ms off a ~101 ms mean, sigma ~10 ms) are still fine.
    assert evaluate_step_outlier(data, outlier_params(stddev=1)).violations == 11


def test_it_flags_steps_far_below_the_mean_too():
    fast = [100 * MS] * 1000 + [MS] * 11
    assert evaluate_step_outlier(job(steps=steps(fast)), outlier_params()).triggered


def test_it_selects_steps_by_mode():
    train = steps(durations(1000, 0), mode="TRAIN")
    evaluation = steps(durations(1000, 11), start_ns=T0 + 10**12, mode="EVAL")
    data = job(steps=pd.concat([train, evaluation], ignore_index=True))
    assert evaluate_step_outlier(data, outlier_params()).triggered
    assert evaluate_step_outlier(data, outlier_params(mode="EVAL")).triggered
    assert not evaluate_step_outlier(data, outlier_params(mode="TRAIN")).triggered


def test_it_is_not_evaluated_without_steps():
    assert evaluate_step_outlier(job(), outlier_params()).not_evaluated_reason == (
        "not evaluated: no training steps annotated"
    )
    only_train = job(steps=steps(durations(10, 0)))
    assert evaluate_step_outlier(only_train, outlier_params(mode="EVAL")).not_evaluated_reason == (
        "not evaluated: no EVAL training steps annotated"
    )
    assert evaluate_step_outlier(job(steps=steps([MS])), outlier_params()).not_evaluated_reason


def init_params(**overrides):
    return params_from_overrides({f"MaxInitializationTime_{k}": v for k, v in overrides.items()})[
        "MaxInitializationTime"
    ]


def test_it_triggers_when_the_first_step_starts_after_the_threshold():
    data = job(steps=steps([MS], start_ns=T0 + 20 * MINUTE + 1), job_start_ns=T0)
    result = evaluate_max_initialization_time(data, init_params())
    assert result.triggered
    assert result.trigger_count == 1  # the scan from minute 20 to 21
    assert [tuple(r)[:4] for r in result.time_ranges] == [(T0, T0 + 20 * MINUTE + 1, "algo-1", -1)]
    assert result.evidence["initialization_s"] == 1200.000000001


def test_it_does_not_trigger_when_the_first_step_starts_at_the_threshold():
    data = job(steps=steps([MS], start_ns=T0 + 20 * MINUTE), job_start_ns=T0)
    result = evaluate_max_initialization_time(data, init_params())
    assert not result.triggered
    assert result.evaluated == 21  # scans 0-1, ..., 19-20 min, and 20-21 where the step shows


def test_it_counts_every_late_scan():
    data = job(steps=steps([MS], start_ns=T0 + 25 * MINUTE), job_start_ns=T0)
    assert evaluate_max_initialization_time(data, init_params()).trigger_count == 5
    assert not evaluate_max_initialization_time(data, init_params(threshold=25)).triggered


def test_it_triggers_while_no_step_has_started_after_the_threshold():
    waiting = job(series(GPU_UTIL, [0.0] * 2), job_start_ns=T0 - 21 * MINUTE)
    result = evaluate_max_initialization_time(waiting, init_params())
    assert result.triggered
    assert result.evidence["note"] == "no step has started yet"
    early = job(series(GPU_UTIL, [0.0] * 2), job_start_ns=T0 - 10 * MINUTE)
    assert not evaluate_max_initialization_time(early, init_params()).triggered


def test_it_does_not_judge_initialization_without_the_job_start():
    data = job(steps=steps([MS], start_ns=T0 + 30 * MINUTE))
    result = evaluate_max_initialization_time(data, init_params())
    assert not result.triggered
    assert result.not_evaluated_reason.startswith("not evaluated: the job's start time is unknown")
