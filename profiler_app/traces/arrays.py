"""Array helpers numpy lacks a fast form of."""

from __future__ import annotations

import numpy as np
import pandas as pd


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of integers, found by sorting: numpy 2 finds unique values with a
    hash set, which took 0.5 s for a million distinct int64 and 1.7 s of a 2.8M-event part's
    parse, against a few milliseconds sorted (numpy/numpy#31969)."""
    ordered = np.sort(np.asarray(values).ravel())
    return ordered[run_starts(ordered)]


def factorize_sorted(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of integers, by pandas' hash table: a
    chunk's pids and tids are a few distinct values among tens of thousands, found 3-10x
    faster than by numpy's sort (0.5 s of a 2.8M-event part's parse)."""
    inverse, uniques = pd.factorize(np.asarray(values).ravel(), sort=True)
    return uniques, inverse


def run_starts(values: np.ndarray) -> np.ndarray:
    """Where each run of equal neighbours starts in ``values`` (its first index); none in an
    empty array."""
    if len(values) == 0:
        return np.empty(0, dtype=np.intp)
    return np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
