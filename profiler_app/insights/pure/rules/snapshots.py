"""Snapshots of sampled metrics: which samples of a node the collector took together, so a
rule judges one reading of every device at a time. A module of its own (out of ``base``):
grouping samples by series without sorting them is a small algorithm, not a rule helper."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

# Samples of one node closer than this belong to one system snapshot: the sampler threads of
# several processes do not wake at exactly the same instant.
SNAPSHOT_GAP_NS = 20_000_000


def snapshot_ids(
    nodes: np.ndarray, times_ns: np.ndarray, series: np.ndarray | None = None
) -> np.ndarray:
    """Snapshot number of each sample (rows sorted by node, then time). A snapshot is the
    samples of a node taken together: a new one starts at a gap longer than SNAPSHOT_GAP_NS,
    or than half the node's sampling interval (the median interval between two samples of one
    ``series``, a device of a metric) when that is shorter: 1 ms kernel-busy points are 1 ms
    snapshots, not one snapshot of the whole trace. A series sampled again within one
    snapshot starts the next one (``_split_repeats``)."""
    if len(times_ns) == 0:
        return np.zeros(0, dtype=np.int64)
    by_series = _SeriesRows.of(_series_key(nodes, series))
    new = np.ones(len(times_ns), dtype=bool)
    gap = _snapshot_gaps(times_ns, by_series)
    new[1:] = (nodes[1:] != nodes[:-1]) | (np.diff(times_ns) > gap[1:])
    return _split_repeats(new, nodes, times_ns, by_series)


@dataclass(frozen=True)
class _SeriesRows:
    """The rows of each series (``_series_key``), grouped without sorting the samples: ``code``
    numbers each row's series, ``keys`` holds each number's key, and ``order`` lists the rows
    series by series (each series' rows in their order, so in time order)."""

    code: np.ndarray
    keys: np.ndarray
    order: np.ndarray

    @classmethod
    def of(cls, key: np.ndarray) -> _SeriesRows:
        code, keys = pd.factorize(key)  # by hashing; series are few, samples many
        # A stable sort of small integers is a radix sort: linear in the samples.
        small = code.astype(np.int16) if len(keys) <= np.iinfo(np.int16).max else code
        return cls(code, keys, np.argsort(small, kind="stable"))

    def bounds(self) -> np.ndarray:
        """Where each series' rows start in ``order``, and where the last one stops."""
        return np.r_[0, np.cumsum(np.bincount(self.code, minlength=len(self.keys)))]


def _split_repeats(
    new: np.ndarray, nodes: np.ndarray, times_ns: np.ndarray, by_series: _SeriesRows
) -> np.ndarray:
    """Snapshot ids from the ``new`` flags, where a later sample of a series already in the
    snapshot starts a new one: the collector's last samples, taken as the job ends, can follow
    the regular ones by a few milliseconds, and one snapshot of both averaged two CPU readings
    into a value nobody measured and counted the GPU memory in use twice. Samples of a series
    at the same instant (one GPU in two ranks' traces) stay together."""
    if not (~new[1:] & (times_ns[1:] != times_ns[:-1])).any():
        return np.cumsum(new) - 1  # every snapshot is one instant: nothing to split
    # In series order, each row after an earlier row of its series (rows are in time order on
    # each node): a repeat when both are in one snapshot.
    order = by_series.order
    same = np.ones(max(len(order) - 1, 0), dtype=bool)
    same[by_series.bounds()[1:-1] - 1] = False  # the first row of each series but the first
    ordered_times = times_ns[order]
    later = same & (ordered_times[1:] > ordered_times[:-1])
    instant_start = None
    new = new.copy()
    while True:
        snap = np.cumsum(new) - 1
        in_order = snap[order]
        repeat = np.sort(order[1:][later & (in_order[1:] == in_order[:-1])])
        if len(repeat) == 0:
            return snap
        if instant_start is None:
            # The first row of each row's instant on its node: a new snapshot starts there.
            instant = np.r_[True, (nodes[1:] != nodes[:-1]) | (times_ns[1:] != times_ns[:-1])]
            instant_start = np.maximum.accumulate(np.where(instant, np.arange(len(new)), 0))
        # The first repeat of each snapshot starts a new one at its instant; the later ones
        # are looked at again in the snapshot it starts.
        first = repeat[np.r_[True, snap[repeat][1:] != snap[repeat][:-1]]]
        new[instant_start[first]] = True


SERIES_BITS = 40


def _series_key(nodes: np.ndarray, series: np.ndarray | None) -> np.ndarray:
    """One non-negative integer per (node, series), the node in the bits above SERIES_BITS: a
    whole-host series is device -1, which, added as it is, read as the node before."""
    if series is None:
        return nodes.astype(np.int64) << SERIES_BITS
    offset = series.astype(np.int64) - int(series.min())
    return (nodes.astype(np.int64) << SERIES_BITS) | offset


def _snapshot_gaps(times_ns: np.ndarray, by_series: _SeriesRows) -> np.ndarray:
    """Each sample's snapshot gap (``snapshot_ids``), by its node: a series' interval is its
    span over its samples less one."""
    bounds, order = by_series.bounds(), by_series.order
    count = np.diff(bounds)
    several = count > 1
    if not several.any():  # one sample per series: nothing to go by
        return np.full(len(times_ns), SNAPSHOT_GAP_NS)
    # A series' rows are in time order: its first and last are its earliest and latest.
    span = times_ns[order[bounds[1:] - 1]] - times_ns[order[bounds[:-1]]]
    node = by_series.keys >> SERIES_BITS
    interval = pd.Series(span[several] / (count[several] - 1))
    per_node = interval.groupby(node[several]).median()
    gap = pd.Series(np.minimum(SNAPSHOT_GAP_NS, per_node.to_numpy() / 2), index=per_node.index)
    # Each series by its node's gap, then each row by its series'.
    return gap.reindex(node, fill_value=SNAPSHOT_GAP_NS).to_numpy()[by_series.code]
