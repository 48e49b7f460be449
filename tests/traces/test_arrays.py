"""``unique_sorted`` is ``np.unique`` of integers (found by sorting instead of numpy's hash set)."""

import numpy as np
import pytest

from profiler_app.traces.arrays import unique_sorted


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
