"""How events nest on a thread (or a timeline lane): one definition for the timeline's rows and
the call tree's frames, so both draw the same parent for an event."""

from __future__ import annotations

import numpy as np


def nesting_depths(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Nesting depth of each event, for events sorted by (group, start, longest first).

    In a properly nested group the earlier events still open at an event's start are its
    ancestors, and every event that has ended by then came earlier: depth = position minus the
    number of events ended by the start (never below 0 where events overlap without nesting).
    """
    depth = np.zeros(len(group), dtype=np.int64)
    if not len(group):
        return depth
    bounds = np.flatnonzero(np.r_[True, group[1:] != group[:-1], True])
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        ended = np.searchsorted(np.sort(end[a:b]), start[a:b], side="right")
        depth[a:b] = np.maximum(np.arange(b - a) - ended, 0)
    return depth
