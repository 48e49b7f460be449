"""What the run history compares of one part's events, in a window: its host operators' self
time (the steps left out: each is a name of its own) and its GPU streams' host-wait idle time,
cut as the insights cut them (the captured steps, then the complete ones). A function of the
part's events alone, so the worker that parsed the part computes it once
(``profiles.part_analyses``) and the history never reads the store again."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from profiler_app.analysis.events import RankTrace, captured_only
from profiler_app.analysis.idle import HOST_WAIT, idle_intervals
from profiler_app.analysis.operators import OPERATOR_KINDS, self_time_by_name
from profiler_app.traces.timeline_read import TimelineReader
from profiler_app.traces.window import COMPLETE_STEPS, rows_in
from tracefmt.kinds import GPU_OP_KINDS, EventKind, of_kinds

OPERATOR_COLUMNS = ["name", "count", "self_ns"]


@dataclass(frozen=True)
class PartFigures:
    operators: pd.DataFrame  # OPERATOR_COLUMNS: one row per host operator name
    host_wait_ns: int

    @classmethod
    def empty(cls) -> PartFigures:
        return cls(pd.DataFrame(columns=OPERATOR_COLUMNS), 0)


def part_figures(trace: RankTrace, window: str) -> PartFigures:
    """The part's figures in ``window``."""
    rows_in(window)  # an unknown window is an error, not the whole trace
    events = trace.events
    counted = _counted(
        events["kind"].to_numpy(),
        events["captured"].to_numpy(),
        events["in_complete_steps"].to_numpy(),
        window,
    )
    operators = self_time_by_name(
        events["name"].to_numpy()[counted],
        events["self_ns"].to_numpy()[counted],
        events["is_step"].to_numpy()[counted],
        trace.names,
    )
    return PartFigures(operators, _host_wait_ns(captured_only(trace), window))


def store_part_figures(
    store_dir: str | Path, rank: int, part_id: int, windows: Iterable[str]
) -> dict[str, PartFigures]:
    """``part_figures`` of a part's store in each of ``windows``, reading only what they need:
    the GPU ops with the calls that launched them and the steps (released before the rest is
    read), then the host operators' names and self times. The whole part's events held 1.1 GB
    for a 2.8M-event part."""
    windows = list(windows)
    for window in windows:
        rows_in(window)
    reader = TimelineReader(store_dir)
    kind = reader.column("kind")
    captured = reader.column("captured")
    host_waits = _store_host_waits(reader, rank, part_id, kind, captured, windows)
    in_complete_steps = reader.column("in_complete_steps")
    names = np.asarray(reader.strings, dtype=object)
    found = {}
    for window in windows:
        counted = _counted(kind, captured, in_complete_steps, window)
        read = reader.columns(["name", "self_ns", "is_step"], counted)
        table = self_time_by_name(read["name"], read["self_ns"], read["is_step"], names)
        found[window] = PartFigures(table, host_waits[window])
    return found


def _store_host_waits(
    reader: TimelineReader,
    rank: int,
    part_id: int,
    kind: np.ndarray,
    captured: np.ndarray,
    windows: list[str],
) -> dict[str, int]:
    """``_host_wait_ns`` in each window, of the store's GPU ops, the calls that launched them
    and its steps (27 % of a GPU part's rows)."""
    gpu = of_kinds(kind, GPU_OP_KINDS)
    timed = gpu | reader.column("is_step")
    launch = reader.column("launch")
    timed[launch[gpu & (launch >= 0)]] = True
    del launch
    if not captured.all():  # ``captured_only`` cuts the part, as it cuts the whole of it
        timed[np.argmin(captured)] = True

    def gpu_side() -> RankTrace:
        read = RankTrace.from_reader(rank, reader, part_id, rows=timed, columns=_HOST_WAIT_READ)
        return captured_only(read)

    # Read again for each window: the complete steps' cut and its GPU ops, held beside the
    # rows it was cut from, made this the parse's highest step (a 2.8M-event part's analyses
    # peak 50 MB lower, for a second read of a quarter of its rows).
    return {window: _host_wait_ns(gpu_side(), window) for window in windows}


# What ``captured_only``, the complete steps and ``idle_intervals`` read of the events.
_HOST_WAIT_READ = [
    *["kind", "name", "start_ns", "dur_ns", "correlation", "stream", "bytes", "memcpy_kind"],
    *["launch", "captured", "step", "is_step", "in_complete_steps"],
]


def _host_wait_ns(captured: RankTrace, window: str) -> int:
    """Host-wait idle time of the GPU streams, in the window, of a trace cut to its captured
    events (``captured_only``)."""
    if window == COMPLETE_STEPS:
        captured = captured.complete_steps()  # the trace given goes, where only this held it
    gaps = idle_intervals(captured)
    return int(gaps.loc[gaps["category"] == HOST_WAIT, "idle_ns"].sum())


def _counted(
    kind: np.ndarray, captured: np.ndarray, in_complete_steps: np.ndarray, window: str
) -> np.ndarray:
    """The host operators that count in ``window``: captured, in the window, no step."""
    keep = of_kinds(kind, OPERATOR_KINDS) & captured & (kind != int(EventKind.STEP))
    return keep & in_complete_steps if window == COMPLETE_STEPS else keep


def combine_part_figures(parts: list[PartFigures]) -> PartFigures:
    """A job's figures from its parts': operators summed by name, host waits added up."""
    found = [p.operators for p in parts if len(p.operators)]
    if not found:
        return PartFigures(PartFigures.empty().operators, sum(p.host_wait_ns for p in parts))
    operators = pd.concat(found, ignore_index=True).groupby("name", as_index=False).sum()
    return PartFigures(operators, sum(p.host_wait_ns for p in parts))
