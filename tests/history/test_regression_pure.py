"""The pure verdict code: the U test against a brute-force count, the series name rule, and
that it loads without Django."""

import itertools

import numpy as np
import pytest

from profiler_app.history.pure.regression import (
    default_series_name,
    mann_whitney_greater,
    smallest_p,
)
from tests.purity import run_without_django


def brute_force_p(baseline, run) -> float:
    """P(U ≥ u) over every way of splitting the pooled values into the two samples."""
    pooled = list(baseline) + list(run)
    n = len(run)

    def u_of(chosen) -> int:
        rest = [pooled[i] for i in range(len(pooled)) if i not in chosen]
        return sum(pooled[i] > r for i in chosen for r in rest)

    observed = u_of(set(range(len(baseline), len(pooled))))
    splits = [u_of(set(c)) for c in itertools.combinations(range(len(pooled)), n)]
    return sum(u >= observed for u in splits) / len(splits)


@pytest.mark.parametrize(
    "baseline, run",
    [
        ([1, 2, 3], [4, 5, 6]),
        ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [3.5, 6.5, 8.5, 9.5, 10.5, 11.5]),
        ([5, 1, 9, 3], [2, 8, 4, 7, 6]),
    ],
)
def test_it_counts_the_exact_p_value(baseline, run):
    test = mann_whitney_greater(np.array(baseline), np.array(run))
    assert test.method == "exact"
    assert test.p_value == pytest.approx(brute_force_p(baseline, run), abs=1e-12)


def test_it_approximates_with_ties():
    base = np.array([10, 10, 11, 12] * 10)
    run = np.array([11, 12, 12, 13] * 10)
    test = mann_whitney_greater(base, run)
    assert test.method == "asymptotic" and test.p_value < 0.001
    assert mann_whitney_greater(run, base).p_value > 0.99


def test_the_smallest_p_of_the_sample_sizes():
    assert smallest_p(3, 3) == 1 / 20
    assert smallest_p(2, 2) == 1 / 6


@pytest.mark.parametrize(
    "job, series",
    [
        ("train-20251126-153012", "train"),
        ("bert-large-run-3", "bert-large"),
        ("resnet50_v2", "resnet50"),
        ("nccl-test", "nccl-test"),
        ("llama.r12", "llama"),
        ("exp-3f9a2c1d7e", "exp"),
        ("20251126", "20251126"),
    ],
)
def test_it_names_a_series_after_the_job_without_its_run_suffix(job, series):
    assert default_series_name(job) == series


def test_it_loads_without_django():
    out = run_without_django(
        """
        import numpy as np
        from profiler_app.history.pure.regression import mann_whitney_greater
        print(mann_whitney_greater(np.array([1, 2, 3]), np.array([4, 5, 6])).p_value)
        """
    )
    assert out == "0.05"
