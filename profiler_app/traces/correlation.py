"""Events linked by correlation id: a host call and the GPU work it launched share one. One
lookup serves the event model's launch times and the sizing of copies whose size only their
runtime call states (ROCm)."""

from __future__ import annotations

import numpy as np

from tracefmt.kinds import EventKind


class CorrelationLookup:
    """A value per correlation id, from the first event (in the order given) that has it."""

    def __init__(self, correlation: np.ndarray, values: np.ndarray) -> None:
        order = np.argsort(correlation, kind="stable")
        self.correlation, self.values = correlation[order], values[order]

    def find(self, correlation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of ``correlation`` have a value, and those values."""
        if not len(self.correlation):
            return np.zeros(len(correlation), dtype=bool), self.values[:0]
        at = np.minimum(np.searchsorted(self.correlation, correlation), len(self.correlation) - 1)
        found = self.correlation[at] == correlation
        return found, self.values[at[found]]


def sizing_calls(kind: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """Which events are runtime calls that state the size of the copy they enqueue
    (``args.size`` of ``hipMemcpyWithStream``)."""
    return (kind == EventKind.CUDA_RUNTIME) & (nbytes >= 0)


def copies_sized_by_calls(
    kind: np.ndarray,
    correlation: np.ndarray,
    nbytes: np.ndarray,
    calls: CorrelationLookup | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """ROCm writes a copy's size only on the runtime call that enqueued it: the rows of copies
    without a size whose call (same correlation id) states one, and those sizes. The calls are
    looked for among these events, or in ``calls`` (a whole part's sizing calls by id)."""
    copies = np.flatnonzero((kind == EventKind.GPU_MEMCPY) & (nbytes < 0) & (correlation >= 0))
    if calls is None:
        rows = np.flatnonzero(sizing_calls(kind, nbytes))
        calls = CorrelationLookup(correlation[rows], nbytes[rows])
    found, sizes = calls.find(correlation[copies])
    return copies[found], sizes
