"""Constructed inputs for the rule tests: metric series sampled at a fixed interval."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from profiler_app.analysis.frames import JobData, framework_frame, metrics_frame, steps_frame

T0 = 1_700_000_000_000_000_000
INTERVAL_NS = 100_000_000  # the collector's default sampling interval


def series(
    metric: str,
    values: Sequence[float],
    node: str = "algo-1",
    device: int = 0,
    offset_ns: int = 0,
    interval_ns: int = INTERVAL_NS,
) -> pd.DataFrame:
    """One device's samples, one every ``interval_ns`` from T0 (+ ``offset_ns``)."""
    n = len(values)
    return metrics_frame(
        T0 + offset_ns + np.arange(n, dtype=np.int64) * interval_ns,
        [node] * n,
        [device] * n,
        [metric] * n,
        np.asarray(values, dtype=np.float64),
    )


def job(*parts: pd.DataFrame, steps: pd.DataFrame | None = None, **kwargs) -> JobData:
    metrics = pd.concat(parts, ignore_index=True) if parts else JobData.empty().metrics
    return JobData(
        metrics,
        steps if steps is not None else JobData.empty().steps,
        kwargs.pop("framework", JobData.empty().framework),
        **kwargs,
    )


def steps(durations_ns: Sequence[int], start_ns: int = T0, mode: str = "TRAIN", rank: int = 0):
    """Back-to-back steps of one rank on algo-1."""
    durations = np.asarray(durations_ns, dtype=np.int64)
    starts = start_ns + np.concatenate(([0], np.cumsum(durations)[:-1]))
    n = len(durations)
    return steps_frame(
        [rank] * n,
        ["algo-1"] * n,
        np.arange(n),
        [f"ProfilerStep#{i}" for i in range(n)],
        starts,
        durations,
        [mode] * n,
    )


__all__ = ["INTERVAL_NS", "T0", "framework_frame", "job", "series", "steps"]
