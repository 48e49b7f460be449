"""Which kernel types make up each GPU figure (pure: the ingest's aggregates and the analyses'
kernel table both count through it, so they cannot define a figure two ways)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from tracefmt.names import COMM, COMP, MEM, OTHER

# Kernels are every GPU op but copies and sets.
KERNEL_TYPES = (COMP, COMM, OTHER)


def gpu_figures(runs: Mapping[str, int], ns: Mapping[str, int]) -> dict[str, int]:
    """Kernel runs, GPU operations and the times per type, from runs and nanoseconds per kernel
    type (COMP, COMM, MEM, OTHER; a type absent counts 0)."""

    def total(values: Mapping[str, int], *types: str) -> int:
        return sum(int(values.get(t, 0)) for t in types)

    return {
        "kernel_runs": total(runs, *KERNEL_TYPES),
        "kernel_ns": total(ns, *KERNEL_TYPES),
        "gpu_op_runs": total(runs, *KERNEL_TYPES, MEM),
        "gpu_op_ns": total(ns, *KERNEL_TYPES, MEM),
        "compute_ns": total(ns, COMP),
        "comm_ns": total(ns, COMM),
        "memory_ns": total(ns, MEM),
        "other_ns": total(ns, OTHER),
    }


def duration_std_ns(count: int, sum_ns: float, sum_sq_ns2: float) -> float:
    """Kernel std: the sample standard deviation of run durations (divided by n − 1, as pandas'
    ``std()`` and HTA give it; 0 for a single run), from their count, sum and sum of squares.
    The Kernels table takes it from the aggregates through here; the Insights kernel tables
    compute the same by pandas' ``std()`` over the runs."""
    if count < 2:
        return 0.0
    variance = (sum_sq_ns2 - sum_ns * sum_ns / count) / (count - 1)
    return math.sqrt(max(variance, 0.0))


def median_step_ns(durations_ns: np.ndarray) -> int | None:
    """The step time (``profiles.figures.FIGURES["step_time"]``) of the steps' durations:
    their median, truncated to a nanosecond; None without steps."""
    return int(np.median(durations_ns)) if len(durations_ns) else None
