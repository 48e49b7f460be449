"""What the run history compares of one part's events, in a window: its host operators' self
time (the steps left out: each is a name of its own) and its GPU streams' host-wait idle time,
cut as the insights cut them (the captured steps, then the complete ones). A function of the
part's events alone, so the worker that parsed the part computes it once
(``profiles.part_analyses``) and the history never reads the store again."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from profiler_app.analysis.events import RankTrace, captured_only
from profiler_app.analysis.idle import HOST_WAIT, idle_intervals
from profiler_app.analysis.operators import operator_table
from profiler_app.traces.window import COMPLETE_STEPS, rows_in
from tracefmt.kinds import EventKind

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
    trace = captured_only(trace)
    covered = trace.complete_steps() if window == COMPLETE_STEPS else trace
    gaps = idle_intervals(covered)
    host_wait_ns = int(gaps.loc[gaps["category"] == HOST_WAIT, "idle_ns"].sum())
    # The window's copy goes before the operators' is made, taken from the captured trace at
    # once: one copy of the part's events held at a time, not two (0.27 GB a 2.8M-event part).
    del covered, gaps
    keep = trace.events["kind"].to_numpy() != int(EventKind.STEP)
    if window == COMPLETE_STEPS:
        keep &= trace.events["in_complete_steps"].to_numpy()
    operators = operator_table([trace.restricted(keep)])[OPERATOR_COLUMNS].reset_index(drop=True)
    return PartFigures(operators, host_wait_ns)


def combine_part_figures(parts: list[PartFigures]) -> PartFigures:
    """A job's figures from its parts': operators summed by name, host waits added up."""
    found = [p.operators for p in parts if len(p.operators)]
    if not found:
        return PartFigures(PartFigures.empty().operators, sum(p.host_wait_ns for p in parts))
    operators = pd.concat(found, ignore_index=True).groupby("name", as_index=False).sum()
    return PartFigures(operators, sum(p.host_wait_ns for p in parts))
