"""Helpers of the trace recommendations, which read the trace analyses and the events they
covered (``TraceAnalyses.window``: each rank's complete steps). Pure: numpy and pandas only."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from profiler_app.insights.analyses.events import RankTrace, merge_intervals
from profiler_app.insights.rules.base import NO_ACTION, RuleResult, TimeRange, result

# Events listed as evidence, per finding.
TOP_EVENTS = 5
NO_STEPS = "no events in the profile"


def name_ids(trace: RankTrace, wanted: Callable[[str], bool]) -> np.ndarray:
    """The string ids whose name ``wanted`` accepts (run once per distinct name)."""
    present = np.unique(trace.events["name"].to_numpy())
    present = present[present >= 0]
    return present[[wanted(str(trace.names[i])) for i in present]]


def events_named(
    trace: RankTrace, wanted: Callable[[str], bool], kinds: tuple[int, ...] | None = None
) -> pd.DataFrame:
    events = trace.events
    rows = np.isin(events["name"].to_numpy(), name_ids(trace, wanted))
    if kinds is not None:
        rows &= events["kind"].isin(kinds).to_numpy()
    return events[rows]


def step_time_ns(trace: RankTrace) -> tuple[int, int]:
    """(number of steps, their summed duration) of the rank's step annotations; a trace with
    none is judged over its whole span, as (0, span)."""
    steps = trace.step_events
    if len(steps):
        return len(steps), int(steps["dur_ns"].sum())
    events = trace.events
    if events.empty:
        return 0, 0
    end = (events["start_ns"] + events["dur_ns"]).max()
    return 0, int(end - events["start_ns"].min())


def window_label(trace: RankTrace, n_steps: int) -> str:
    """What the rank's figures cover: the captured steps of a collector job, else its steps."""
    if trace.scope:
        return trace.scope
    return "annotated steps" if n_steps else "the whole profile (no steps annotated)"


def covered_ns(events: pd.DataFrame) -> int:
    """Time covered by ``events`` with nested or overlapping ones counted once."""
    if events.empty:
        return 0
    ordered = events.sort_values("start_ns", kind="stable")
    start = ordered["start_ns"].to_numpy()
    starts, ends = merge_intervals(start, start + ordered["dur_ns"].to_numpy())
    return int((ends - starts).sum())


def top_ranges(trace: RankTrace, events: pd.DataFrame, n: int = TOP_EVENTS) -> list[TimeRange]:
    """The ``n`` longest events as timeline links that select them."""
    longest = events.nlargest(n, "dur_ns")
    return [
        TimeRange(int(start), int(start + dur), "", -1, trace.rank, trace.event_ref(int(position)))
        for position, start, dur in zip(
            longest.index, longest["start_ns"], longest["dur_ns"], strict=True
        )
    ]


def top_events(trace: RankTrace, events: pd.DataFrame, n: int = TOP_EVENTS) -> list[dict]:
    """The ``n`` longest events: name, rank, start and duration."""
    longest = events.nlargest(n, "dur_ns")
    return [
        {
            "name": str(trace.names[name]),
            "rank": trace.rank,
            "start_ns": int(start),
            "dur_ns": int(dur),
        }
        for name, start, dur in zip(
            longest["name"], longest["start_ns"], longest["dur_ns"], strict=True
        )
    ]


def share_pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


def per_rank_result(
    rule: str,
    params: object,
    ranks: dict[str, dict],
    flagged: list,
    *,
    datapoints: int,
    evidence: dict,
    advice: str,
    time_ranges: list[TimeRange] | None = None,
) -> RuleResult:
    """A recommendation judged rank by rank: evaluated once per rank, triggered on each flagged
    one; the advice only when something was flagged."""
    return result(
        rule,
        params,
        evaluated=len(ranks),
        trigger_count=len(flagged),
        violations=len(flagged),
        datapoints=datapoints,
        evidence={"ranks": ranks, **evidence},
        time_ranges=time_ranges or [],
        recommendation=advice if flagged else NO_ACTION,
    )
