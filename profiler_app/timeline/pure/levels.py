"""Duration classes and per-row summary levels: what makes a viewport query independent of
how many events a row holds.

A viewport at bucket width ``2**k`` ns draws every event with ``dur_ns >= 2**k`` on its own and
merges the others into one block per bucket. With ``duration_class(d) = d.bit_length()``, the
merged ("narrow") events are exactly those of class ``<= k``, so level ``k`` of a row is the
per-bucket count, summed duration and longest name of its class ``<= k`` events. Levels are
built incrementally (level ``k`` = level ``k-1`` with buckets halved, plus class ``k``) and kept
only where they summarise at least ``MIN_RATIO`` events per bucket; elsewhere the query reads
the few narrow events directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

N_CLASSES = 64
CLASS_SHIFT = 57  # ckey = class << 57 | start relative to the part's origin
MAX_REL_NS = (1 << CLASS_SHIFT) - 1
MIN_RATIO = 4
_POW2 = np.left_shift(np.int64(1), np.arange(63, dtype=np.int64))
# Longest possible duration of class c (its events last less than 2**c ns).
CLASS_REACH_NS = np.r_[_POW2 - 1, np.iinfo(np.int64).max].astype(np.int64)


def duration_class(dur_ns: np.ndarray) -> np.ndarray:
    """``int.bit_length`` of each duration: 0 for 0 ns, c for [2**(c-1), 2**c)."""
    return np.searchsorted(_POW2, dur_ns, side="right").astype(np.int64, copy=False)


def class_keys(cls: np.ndarray, rel_start_ns: np.ndarray) -> np.ndarray:
    """(duration class, start) as one sortable key. Built in ``cls``'s memory when it is
    int64 already (``duration_class``'s): over a whole part each working array is a column."""
    key = cls.astype(np.int64, copy=False)
    key <<= CLASS_SHIFT
    key |= rel_start_ns
    return key


@dataclass(frozen=True)
class Level:
    k: int
    bucket: np.ndarray  # start_ns >> k
    count: np.ndarray
    busy_ns: np.ndarray  # summed durations of the bucket's narrow events
    name: np.ndarray  # name of its longest narrow event
    terminal: bool  # holds every event of the row in one bucket, so it stands for coarser levels


def _group(bucket, count, busy, longest, name) -> tuple[np.ndarray, ...]:
    """Rows with equal buckets combined; the longest row of each group gives the name (of
    equally long ones, the last). The rows come as two runs sorted by bucket (the coarser
    level's groups, then the events added), which a stable sort merges in one pass."""
    order = np.argsort(bucket, kind="stable")
    bucket, count, busy = bucket[order], count[order], busy[order]
    longest, name = longest[order], name[order]
    first = np.flatnonzero(np.concatenate(([True], bucket[1:] != bucket[:-1])))
    most = np.maximum.reduceat(longest, first)
    # The last row of each group as long as its longest.
    longest_rows = np.flatnonzero(longest == np.repeat(most, np.diff(np.r_[first, len(bucket)])))
    ends = np.r_[first[1:], len(bucket)]
    chosen = longest_rows[np.searchsorted(longest_rows, ends) - 1]
    return (
        bucket[first],
        np.add.reduceat(count, first),
        np.add.reduceat(busy, first),
        most,
        name[chosen],
    )


def build_levels(start_ns: np.ndarray, dur_ns: np.ndarray, name: np.ndarray) -> Iterator[Level]:
    """The kept levels of one row (events in start order)."""
    if not len(start_ns):
        return
    cls = duration_class(dur_ns)
    by_class = np.argsort(cls, kind="stable")  # start order within each class
    bounds = np.searchsorted(cls[by_class], np.arange(N_CLASSES + 1))
    empty_i, empty_n = np.empty(0, np.int64), np.empty(0, np.int32)
    bucket, count, busy, longest, names = empty_i, empty_i, empty_i, empty_i, empty_n
    narrow = 0
    for k in range(int(cls.min()), N_CLASSES - 1):
        added = by_class[bounds[k] : bounds[k + 1]]
        if len(added) or k:
            # np.concatenate, not np.r_: this runs per level of every row, and np.r_'s own
            # work was a quarter of building a part's index.
            bucket = np.concatenate((bucket >> 1 if k else bucket, start_ns[added] >> k))
            count = np.concatenate((count, np.ones(len(added), np.int64)))
            busy = np.concatenate((busy, dur_ns[added]))
            longest = np.concatenate((longest, dur_ns[added]))
            names = np.concatenate((names, name[added])).astype(np.int32)
            bucket, count, busy, longest, names = _group(bucket, count, busy, longest, names)
            narrow += len(added)
        terminal = narrow == len(start_ns) and len(bucket) == 1
        if narrow >= MIN_RATIO * len(bucket) > 0:
            yield Level(k, bucket, count, busy, names, terminal)
        if terminal:
            return
