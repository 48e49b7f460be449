"""Compact JSON of the trace analyses, for the API and the Insights page (pure: no Django).

Tables go whole (HTA's top kernels per rank and type, the rest as "others", is a table of its
own): the per-kernel and operator tables (a few thousand rows per job at most) keep
their ``MAX_TABLE_ROWS`` busiest rows only past that, and their ``*_total`` fields count every
row. The queue-length and bandwidth series are down-sampled to at most ``MAX_POINTS`` per line
by keeping each bin's maximum, so short peaks stay visible; a chart's lines share one budget of
``SERIES_POINTS_TOTAL`` points past 100 lines (a 1,024-rank job's 2,048 queue-length lines at
400 points were 10.8 MB of its 44 MB of analyses), each keeping at least ``LINE_POINTS_MIN``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from profiler_app.analysis import RankTables, TraceAnalyses
from profiler_app.core.text import storable_json
from profiler_app.traces.arrays import run_starts
from profiler_app.traces.figures import gpu_figures

MAX_POINTS = 400
SERIES_POINTS_TOTAL = 40_000
LINE_POINTS_MIN = 20
# Far above any real job's distinct kernels or operators; a guard, not a top-N.
MAX_TABLE_ROWS = 20_000


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain JSON values (NaN -> null, categoricals -> text)."""
    return json.loads(frame.to_json(orient="records"))


def peak_series(
    frame: pd.DataFrame, keys: list[str], value: str, max_points: int | None = None
) -> list[dict[str, Any]]:
    """One line per ``keys`` group, in key order: ``points`` [[time_ns, max value in the bin],
    ...], at most ``max_points`` of them (by default, ``points_per_line`` of the chart's
    lines)."""
    found, rows = _lines(frame, keys)
    if max_points is None:
        max_points = points_per_line(len(found))
    time_ns, values = frame["time_ns"].to_numpy(), frame[value].to_numpy(dtype=np.float64)
    for line, at in zip(found, rows, strict=True):
        line["points"] = _peaks(time_ns[at], values[at], max_points)
    return found


def _lines(frame: pd.DataFrame, keys: list[str]) -> tuple[list[dict[str, Any]], list[np.ndarray]]:
    """The ``keys`` groups, as ``groupby(keys, sort=True)`` makes them: each one's key values
    and its rows, in the frame's order (numpy: a thousand ranks' groups took seconds in
    pandas)."""
    factors = [pd.factorize(frame[k], sort=True) for k in keys]
    line = np.zeros(len(frame), dtype=np.int64)
    known = np.ones(len(frame), dtype=bool)
    for codes, uniques in factors:
        line = line * len(uniques) + codes
        known &= codes >= 0  # a missing key: in no group
    order = np.flatnonzero(known)
    order = order[np.argsort(line[order], kind="stable")]
    starts = np.flatnonzero(np.diff(line[order], prepend=-1))
    found = [
        {
            k: _plain(uniques[codes[order[at]]])
            for k, (codes, uniques) in zip(keys, factors, strict=True)
        }
        for at in starts
    ]
    return found, np.split(order, starts[1:]) if len(starts) else []


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _peaks(time_ns: np.ndarray, values: np.ndarray, max_points: int) -> list[list]:
    """A line's [time_ns, value] points in time order, each bin's maximum past ``max_points``."""
    order = np.argsort(time_ns, kind="stable")
    time_ns, values = time_ns[order], values[order]
    if len(time_ns) > max_points:
        # Integer bins: epoch nanoseconds do not survive a round trip through floats.
        width_ns = (int(time_ns[-1] - time_ns[0]) // max_points) + 1
        bins = (time_ns - time_ns[0]) // width_ns
        starts = run_starts(bins)
        values = np.maximum.reduceat(values, starts)
        time_ns = time_ns[0] + bins[starts] * width_ns
    return [[int(t), float(v)] for t, v in zip(time_ns, values, strict=True)]


def points_per_line(lines: int) -> int:
    return max(LINE_POINTS_MIN, min(MAX_POINTS, SERIES_POINTS_TOTAL // max(lines, 1)))


def busiest(frame: pd.DataFrame, by: str) -> list[dict[str, Any]]:
    """Every row, the largest ``by`` first; only the ``MAX_TABLE_ROWS`` largest past that."""
    ordered = frame.sort_values(by, ascending=False, kind="stable")
    return records(ordered.head(MAX_TABLE_ROWS))


def analyses_json(result: TraceAnalyses) -> dict[str, Any]:
    return {
        k: v for name, part in TABLE_JSON.items() for k, v in part(getattr(result, name)).items()
    }


def tables_json_text(ranks: RankTables, series: dict[str, SeriesLines]) -> str:
    """The analyses' JSON (``analyses_json``) of the job whose ranks' tables are ``ranks`` (its
    series folded into ``series`` as they were gathered), as text with every string storable
    (``storable_json``), made a table at a time: the tables joined one at a time, and only one
    table's part held as Python values."""
    parts = [
        f"{json.dumps(name)}: {storable_json(lines.peaks())}" for name, lines in series.items()
    ]
    for name, table in ranks.combined():
        if name in TABLE_JSON:
            parts += [
                f"{json.dumps(k)}: {storable_json(v)}" for k, v in TABLE_JSON[name](table).items()
            ]
        del table
    return "{" + ", ".join(parts) + "}"


class SeriesLines:
    """``peak_series`` of the ranks' series one after another, each rank's rows reduced to its
    lines' points as they come (``add``): a 1,024-rank job's queue lengths are 7.7M rows, held
    as a time and a value a point instead of its ranks' frames (0.2 GB less). The same lines as
    from all rows at once, in the same order (the down-sampling's budget per line depends on
    how many lines the chart has, known at the end); a line in two pieces is made of their rows
    together."""

    def __init__(self, keys: list[str], value: str) -> None:
        self.keys, self.value = keys, value
        self.points: dict[tuple, list[tuple[np.ndarray, np.ndarray]]] = {}

    def add(self, piece: pd.DataFrame) -> None:
        found, rows = _lines(piece, self.keys)
        time_ns = piece["time_ns"].to_numpy()
        values = piece[self.value].to_numpy(dtype=np.float64)
        for line, at in zip(found, rows, strict=True):
            order = at[np.argsort(time_ns[at], kind="stable")]  # as ``_peaks`` sorts them
            self.points.setdefault(tuple(line.values()), []).append((time_ns[order], values[order]))

    def peaks(self, max_points: int | None = None) -> list[dict[str, Any]]:
        """The lines, in key order, at most ``max_points`` a line (by default, as
        ``peak_series``); their points handed over."""
        if max_points is None:
            max_points = points_per_line(len(self.points))
        lines = []
        for key in sorted(self.points):
            pieces = self.points.pop(key)
            time_ns = np.concatenate([t for t, _ in pieces])
            values = np.concatenate([v for _, v in pieces])
            lines.append(
                {
                    **dict(zip(self.keys, key, strict=True)),
                    "points": _peaks(time_ns, values, max_points),
                }
            )
        return lines


def series_lines() -> dict[str, SeriesLines]:
    """An empty ``SeriesLines`` for each of ``SERIES``."""
    return {name: SeriesLines(keys, value) for name, (keys, value) in SERIES.items()}


# The series, down-sampled line by line: (the keys of a line, its value).
SERIES = {
    "memory_bandwidth": (["rank", "kind"], "bandwidth_gbps"),
    "queue_length": (["rank", "stream"], "queue_length"),
}


# Each table's part of the analyses' JSON (tables not listed are not shown).
TABLE_JSON: dict[str, Callable[[pd.DataFrame], dict[str, Any]]] = {
    "temporal": lambda t: {"temporal": records(t)},
    "kernel_types": lambda t: {"kernel_types": records(t)},
    "kernels": lambda t: {
        "kernels": busiest(t, "sum_ns"),
        "kernels_total": len(t),
        "totals": gpu_totals(t),
    },
    "top_kernels": lambda t: {"top_kernels": records(t)},
    "overlap": lambda t: {"overlap": records(t)},
    "idle": lambda t: {"idle": records(t)},
    "idle_intervals": lambda t: {"idle_intervals": records(t)},
    "memory_bandwidth": lambda t: {"memory_bandwidth": peak_series(t, *SERIES["memory_bandwidth"])},
    "memory_bandwidth_summary": lambda t: {"memory_bandwidth_summary": records(t)},
    "queue_length": lambda t: {"queue_length": peak_series(t, *SERIES["queue_length"])},
    "queue_length_summary": lambda t: {"queue_length_summary": records(t)},
    "launch_stats": lambda t: {"launch_stats": records(t)},
    "launch_findings": lambda t: {"launch_findings": records(t)},
    "operators": lambda t: {"operators": busiest(t, "self_ns"), "operators_total": len(t)},
    "operators_by_shape": lambda t: _operators_by_shape(t),
}


def gpu_totals(kernels: pd.DataFrame) -> dict[str, int]:
    """The GPU figures (``traces.figures``) of the analyses' per-kernel table (the events), so
    the Insights page states the same figures as the pages reading the aggregates."""
    by_type = kernels.groupby("type")[["count", "sum_ns"]].sum()
    return gpu_figures(by_type["count"].to_dict(), by_type["sum_ns"].to_dict())


def _operators_by_shape(by_shape: pd.DataFrame) -> dict[str, Any]:
    """The by-shape operator table, or nothing when the trace recorded no shapes."""
    recorded = bool(len(by_shape)) and bool((by_shape["input_dims"] != "").any())
    return {
        "input_shapes_recorded": recorded,
        "operators_by_shape": busiest(by_shape, "self_ns") if recorded else [],
        "operators_by_shape_total": len(by_shape) if recorded else 0,
    }
