"""``unique_sorted`` is ``np.unique`` of integers (found by sorting instead of numpy's hash set),
``factorize_sorted`` its ``return_inverse`` form (by pandas' hash table); ``run_starts`` finds
where each run of equal neighbours starts."""

import numpy as np
import pytest

from profiler_app.traces.arrays import factorize_sorted, run_starts, unique_sorted


@pytest.mark.parametrize(
    "values",
    [
        np.zeros(0, dtype=np.int64),
        np.array([5], dtype=np.int64),
        np.array([3, -1, 3, 7, -1, 2**62], dtype=np.int64),
        np.array([[4, 1], [1, 9]], dtype=np.int32),
        np.random.default_rng(3).integers(-(10**15), 10**15, 100_000),
        np.random.default_rng(4).integers(0, 50, 100_000).astype(np.uint8),
    ],
    ids=["empty", "one", "repeats", "two-dimensional", "many-distinct", "few-distinct"],
)
def test_it_is_numpys_unique(values):
    found = unique_sorted(values)
    expected = np.unique(values)
    assert found.dtype == expected.dtype
    assert np.array_equal(found, expected)


@pytest.mark.parametrize(
    "values",
    [
        np.zeros(0, dtype=np.int64),
        np.array([5], dtype=np.int64),
        np.array([3, -1, 3, 7, -1, 2**62, -(2**63)], dtype=np.int64),
        np.random.default_rng(3).integers(-(10**15), 10**15, 100_000),
        np.random.default_rng(4).integers(0, 50, 100_000),
    ],
    ids=["empty", "one", "repeats", "many-distinct", "few-distinct"],
)
def test_factorize_sorted_is_numpys_unique_with_its_inverse(values):
    uniques, inverse = factorize_sorted(values)
    expected, expected_inverse = np.unique(values, return_inverse=True)
    assert uniques.dtype == expected.dtype
    assert np.array_equal(uniques, expected)
    assert np.array_equal(inverse, expected_inverse.reshape(-1))
    assert np.array_equal(uniques[inverse], values)


@pytest.mark.parametrize(
    "values",
    [
        np.zeros(0, dtype=np.int64),
        np.array([7], dtype=np.int64),
        np.array([2, 2, 2], dtype=np.int64),
        np.array([1, 1, 4, 4, 4, 1, 9], dtype=np.int64),
        np.random.default_rng(5).integers(0, 4, 10_000),
    ],
    ids=["empty", "one", "one-run", "runs", "random"],
)
def test_run_starts_are_where_a_value_differs_from_the_one_before(values):
    # Counted one element at a time: the first, and each that differs from its neighbour.
    expected = [i for i in range(len(values)) if i == 0 or values[i] != values[i - 1]]
    assert run_starts(values).tolist() == expected
