"""The numpy helpers the analyses group and describe with give what the pandas and numpy calls
they replace give, on random data: quartiles to the bit, sums exactly, groups in the same
order. (The analyses' figures are checked against HTA and the raw traces elsewhere; these pin
the helpers on inputs those traces do not reach: -1 ids, one value, NaN, many groups.)"""

import numpy as np
import pandas as pd
import pytest

from profiler_app.analysis.events import (
    grouped_describe,
    min_quartiles_max,
    sums_by_key,
)
from profiler_app.traces.nesting import nearest
from tracefmt.kinds import EventKind, of_kinds
from tracefmt.strings import present_ids

RNG = np.random.default_rng(20261127)


def random_values(trial: int) -> np.ndarray:
    n = int(RNG.integers(1, 40)) if trial % 2 else int(RNG.integers(1, 3000))
    return [
        RNG.normal(0, 1e6, n),
        RNG.integers(0, 10, n).astype(np.float64),  # many ties
        RNG.exponential(1e9, n),
        np.round(RNG.lognormal(3, 2, n), 3),
    ][trial % 4]


def test_quartiles_equal_numpy_percentile_to_the_bit():
    for trial in range(4000):
        values = random_values(trial)
        low, quartiles, high = min_quartiles_max(values.copy())
        assert low == values.min() and high == values.max()
        assert quartiles == np.percentile(values, (25, 50, 75)).tolist()


def test_quartiles_of_values_with_nan_are_nan_as_numpy_gives_them():
    low, quartiles, high = min_quartiles_max(np.array([1.0, np.nan, 3.0]))
    assert np.isnan([low, *quartiles, high]).all()
    assert np.isnan(np.percentile([1.0, np.nan, 3.0], (25, 50, 75))).all()


@pytest.mark.parametrize(
    "shapes, name_ids",
    [(False, 300), (True, 300), (True, 10**6)],  # the last: too wide a range to count, hashed
)
def test_sums_by_key_equal_pandas_groupby_in_first_appearance_order(shapes, name_ids):
    n = 20_000
    columns = {
        "name": RNG.integers(0, name_ids, n).astype(np.int32),
        "input_dims": (RNG.integers(-1, 50, n) if shapes else np.full(n, -1)).astype(np.int32),
        "total_ns": RNG.integers(0, 10**12, n),
        "self_ns": RNG.integers(0, 10**12, n),
    }
    keys = ["name", "input_dims"]
    expected = (
        pd.DataFrame(columns)
        .groupby(keys, sort=False)
        .agg(count=("total_ns", "size"), total_ns=("total_ns", "sum"), self_ns=("self_ns", "sum"))
        .reset_index()
    )
    pd.testing.assert_frame_equal(sums_by_key(columns, keys), expected, check_exact=True)


def test_grouped_describe_equals_pandas_describe_per_group():
    n = 30_000
    frame = pd.DataFrame(
        {
            "rank": np.full(n, 3),  # one value: numbered without counting
            "stream": RNG.choice([7, 20, 1_000_000], n).astype(np.int32),  # a wide range
            "category": pd.Categorical.from_codes(RNG.integers(0, 3, n), ["c", "a", "b"]),
            "idle_ns": RNG.integers(0, 10**9, n),
        }
    )
    keys = ["rank", "stream", "category"]
    ours = grouped_describe(frame, keys, "idle_ns")
    theirs = frame.groupby(keys, observed=True)["idle_ns"].describe().reset_index()
    # Groups in key order; a categorical key in its categories' order, as pandas gives them.
    for key in keys:
        assert ours[key].tolist() == theirs[key].tolist()
    for mine, pandas_name in [("count", "count"), ("min", "min"), ("max", "max")]:
        assert ours[mine].tolist() == theirs[pandas_name].tolist()
    for mine, pandas_name in [("p25", "25%"), ("p50", "50%"), ("p75", "75%")]:
        assert ours[mine].tolist() == theirs[pandas_name].tolist()
    for stat in ("mean", "std"):
        np.testing.assert_allclose(ours[stat], theirs[stat], rtol=1e-12)


def test_of_kinds_and_present_ids_equal_isin_and_unique():
    kind = RNG.integers(0, 20, 50_000).astype(np.uint8)
    kinds = (EventKind.KERNEL, EventKind.GPU_MEMCPY, EventKind.CUDA_RUNTIME)
    np.testing.assert_array_equal(of_kinds(kind, kinds), np.isin(kind, [int(k) for k in kinds]))
    ids = RNG.integers(-1, 5_000, 50_000).astype(np.int32)
    found = present_ids(ids)
    np.testing.assert_array_equal(found, np.unique(ids[ids >= 0]))
    assert found.dtype == ids.dtype
    assert len(present_ids(np.zeros(0, dtype=np.int32))) == 0


def test_nearest_marked_ancestor_equals_a_walk_level_by_level():
    def level_by_level(marked, parent, depth):
        owner = np.where(marked, np.arange(len(marked)), -1)
        for level in range(1, int(depth.max(initial=0)) + 1):
            at = np.flatnonzero((depth == level) & ~marked & (parent >= 0))
            owner[at] = owner[parent[at]]
        return owner

    for _ in range(200):
        n = int(RNG.integers(1, 400))
        parent = np.full(n, -1)
        depth = np.zeros(n, dtype=np.int32)
        for i in range(1, n):
            if RNG.random() < 0.8:  # a forest: some events are roots
                parent[i] = int(RNG.integers(0, i))
                depth[i] = depth[parent[i]] + 1
        marked = RNG.random(n) < 0.3
        expected = level_by_level(marked, parent, depth)
        np.testing.assert_array_equal(nearest(marked, parent, depth), expected)
