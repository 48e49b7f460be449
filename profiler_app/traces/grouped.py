"""Exact grouped sums of a part's events, batch by batch: each batch is grouped on its own
(count, sum, min, max per int64 key) and the batches' groups are merged once at the end, so
memory follows the number of keys, not of events."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from profiler_app.traces.arrays import run_starts


def grouped(keys: np.ndarray, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Exact per-key count, sum, min, max (and float sum of squares) of int64 durations."""
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    starts = run_starts(k)
    out = {"key": k[starts], "count": np.diff(np.r_[starts, len(k)])}
    for name, arr in values.items():
        sorted_values = arr[order]
        if name.endswith("_min"):
            out[name] = np.minimum.reduceat(sorted_values, starts) if len(k) else sorted_values
        elif name.endswith("_max"):
            out[name] = np.maximum.reduceat(sorted_values, starts) if len(k) else sorted_values
        else:
            out[name] = np.add.reduceat(sorted_values, starts) if len(k) else sorted_values
    return out


@dataclass
class Partials:
    """Per-batch grouped results, combined once at the end."""

    parts: list[dict[str, np.ndarray]] = field(default_factory=list)

    def add(self, part: dict[str, np.ndarray]) -> None:
        if len(part["key"]):
            self.parts.append(part)

    def combine(self) -> dict[str, np.ndarray]:
        if not self.parts:
            return {"key": np.empty(0, np.int64), "count": np.empty(0, np.int64)}
        merged = {c: np.concatenate([p[c] for p in self.parts]) for c in self.parts[0]}
        keys = merged.pop("key")
        merged["count_sum"] = merged.pop("count")
        result = grouped(keys, merged)
        result.pop("count")  # how many partial rows met; the event count is "count_sum"
        return result
