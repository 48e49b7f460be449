"""Helpers of the trace recommendations, which read the trace analyses and the events they
covered (``TraceAnalyses.window``: each rank's complete steps), rank by rank
(``RankRule``). Pure: numpy and pandas only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from profiler_app.analysis import TraceAnalyses
from profiler_app.analysis.events import RankTrace, merge_intervals
from profiler_app.insights.pure.rules.base import (
    NO_ACTION,
    RuleResult,
    TimeRange,
    not_evaluated,
    result,
)
from profiler_app.traces.event_model import launch_times as event_launch_times
from tracefmt.kinds import EventKind, of_kinds

# Events listed as evidence, per finding.
TOP_EVENTS = 5
NO_STEPS = "no events in the profile"
# Host events whose pattern marks a loop's iterations when no step is annotated.
TOP_LEVEL_KINDS = (
    int(EventKind.CPU_OP),
    int(EventKind.USER_ANNOTATION),
    int(EventKind.PYTHON_FUNCTION),
)


def name_ids(trace: RankTrace, wanted: Callable[[str], bool]) -> np.ndarray:
    """The string ids whose name ``wanted`` accepts (run once per distinct name)."""
    present = trace.present_names
    return present[[wanted(str(trace.names[i])) for i in present]]


def events_named(
    trace: RankTrace,
    wanted: Callable[[str], bool],
    kinds: tuple[int, ...] | None = None,
    among: np.ndarray | None = None,
) -> pd.DataFrame:
    """The events (those ``among`` selects, by default all the rank's) whose name ``wanted``
    accepts."""
    events = trace.events
    ids = name_ids(trace, wanted)
    if not len(ids):  # most ranks have no event of most names asked for
        return events.iloc[:0]
    rows = np.isin(events["name"].to_numpy(), ids)
    if among is not None:
        rows &= among
    if kinds is not None:
        rows &= of_kinds(events["kind"].to_numpy(), kinds)
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


@dataclass(frozen=True)
class Scope:
    """Where a rank's recommendations are judged, and the events in it.

    With step annotations: inside the steps, the events whose ``step`` (the event model's; GPU
    work by its launch) is a step number, over the steps' summed duration. Without them: the
    steady state, from the start of the second iteration to the end of the last one (see
    ``steady_state``); the whole profile only when no iteration repeats."""

    steps: int
    scope_ns: int
    label: str
    rows: np.ndarray  # which of the rank's events lie in the scope
    start_ns: int = 0  # the steady state's bounds (0, 0 with steps)
    end_ns: int = 0


NO_ITERATION = "the whole profile (no steps annotated, no repeating iteration found)"


def scope_of(trace: RankTrace) -> Scope:
    steps = trace.step_events
    events = trace.events
    if len(steps):
        inside = events["step"].to_numpy() >= 0
        return Scope(
            len(steps), int(steps["dur_ns"].sum()), window_label(trace, len(steps)), inside
        )
    everything = np.ones(len(events), dtype=bool)
    if events.empty:
        return Scope(0, 0, NO_ITERATION, everything)
    found = steady_state(trace)
    if found is None:
        start = int(events["start_ns"].min())
        end = int((events["start_ns"] + events["dur_ns"]).max())
        return Scope(0, end - start, NO_ITERATION, everything, start, end)
    start, end, iterations = found
    at = launch_times(trace)
    inside = (at >= start) & (at < end)
    label = (
        f"the steady state: iterations 2–{iterations} of {iterations} "
        f"(no steps annotated; the first iteration is left out as warm-up)"
    )
    return Scope(0, end - start, label, inside, start, end)


def launch_times(trace: RankTrace) -> np.ndarray:
    """When each event happened for the host (``traces.event_model.launch_times``: GPU work
    at its launch, as the event model places it in steps)."""
    events = trace.events
    return event_launch_times(
        events["kind"].to_numpy(), events["start_ns"].to_numpy(), events["correlation"].to_numpy()
    )


def steady_state(trace: RankTrace) -> tuple[int, int, int] | None:
    """(start, end, iterations) of the steady state of a trace without step annotations.

    The iterations are found on the main thread (the one whose top-level host events last
    longest): most names recurring at its top level recur once per iteration, so the number of
    iterations is the commonest count among top-level names seen more than once, and the first
    top-level name seen that many times opens each iteration. The steady state runs from that
    name's second occurrence to the end of the last top-level event of a name seen once per
    iteration; what runs before (set-up, cuDNN autotuning, compilation) and after the loop (a
    final synchronisation) is left out. None with fewer than two iterations."""
    events = trace.events
    top = events[
        (events["depth"].to_numpy() == 0)
        & of_kinds(events["kind"].to_numpy(), TOP_LEVEL_KINDS)
        & (events["name"].to_numpy() >= 0)
    ]
    if top.empty:
        return None
    main = top.groupby("track")["dur_ns"].sum().idxmax()
    top = top[top["track"] == main].sort_values("start_ns", kind="stable")
    names = top["name"].to_numpy()
    ids, counts = np.unique(names, return_counts=True)
    recurring = counts[counts >= 2]
    if not len(recurring):
        return None
    values, how_often = np.unique(recurring, return_counts=True)
    iterations = int(values[np.argmax(how_often)])  # ties: the fewer iterations
    per_iteration = ids[counts == iterations]
    marks = np.isin(names, per_iteration)
    opener = names[np.argmax(marks)]
    starts = top["start_ns"].to_numpy()
    start = int(starts[names == opener][1])
    ends = starts + top["dur_ns"].to_numpy()
    end = int(ends[marks].max())
    return start, end, iterations


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
    return links(trace, events.nlargest(n, "dur_ns"))


def links(trace: RankTrace, events: pd.DataFrame) -> list[TimeRange]:
    """Each of ``events``, in their order, as a timeline link that selects it."""
    return [
        TimeRange(int(start), int(start + dur), "", -1, trace.rank, trace.event_ref(int(position)))
        for position, start, dur in zip(
            events.index, events["start_ns"], events["dur_ns"], strict=True
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


@dataclass(frozen=True)
class RankJudgement:
    """One rank's part of a recommendation: its evidence row, whether it is flagged, its
    timeline links, and what it adds to the job's list of events (top events, call sites)."""

    rank: int
    figures: dict[str, Any]
    flagged: bool
    time_ranges: list[TimeRange] = field(default_factory=list)
    listed: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class RankInputs:
    """What a recommendation reads of one rank, whatever its parameters: the figures of its
    evidence row, and the timeline links and listed events it gives when flagged. Computed
    once per rank and window (``RankRule.read``), judged again for each choice of parameters
    (``RankRule.judge``) without the rank's events. ``kept``: what else a judgement needs."""

    rank: int
    figures: dict[str, Any]
    time_ranges: list[TimeRange] = field(default_factory=list)
    listed: list[dict] = field(default_factory=list)
    kept: Any = None


@dataclass(frozen=True)
class RankRule:
    """A recommendation judged one rank at a time, then combined: ``read`` reads one rank's
    events and its rows of the analyses (None: nothing to judge there), ``judge`` judges what
    it read with the rule's parameters, and ``combine`` turns the ranks' judgements into the
    job's result. A job's ranks can so be read one after another, never all at once, and a
    change of parameters judges again what was read without reading a rank."""

    read: Callable[[RankTrace, TraceAnalyses], RankInputs | None]
    judge: Callable[[RankInputs, Any], RankJudgement]
    combine: Callable[[list[RankJudgement], Any], RuleResult]

    def judge_rank(
        self, trace: RankTrace, analyses: TraceAnalyses, params: Any
    ) -> RankJudgement | None:
        found = self.read(trace, analyses)
        return None if found is None else self.judge(found, params)

    def evaluate(self, analyses: TraceAnalyses, params: Any) -> RuleResult:
        """Every rank the analyses covered, at once."""
        judged = (self.judge_rank(trace, analyses, params) for trace in analyses.window)
        return self.combine([j for j in judged if j is not None], params)


def above(
    figure: str, threshold: str, linked_unflagged: bool = False
) -> Callable[[RankInputs, Any], RankJudgement]:
    """The judgement of a rank flagged when its ``figure`` is above the parameter
    ``threshold``; its timeline links only then, unless ``linked_unflagged``."""

    def judge(found: RankInputs, params: Any) -> RankJudgement:
        flagged = found.figures[figure] > getattr(params, threshold)
        ranges = found.time_ranges if flagged or linked_unflagged else []
        return RankJudgement(found.rank, found.figures, flagged, ranges, found.listed)

    return judge


def combined(
    rule: str,
    params: object,
    judgements: list[RankJudgement],
    *,
    flagged_key: str,
    datapoints: Callable[[dict], int] | None,
    advice: str,
    nothing_judged: str,
    listed_key: str | None = None,
) -> RuleResult:
    """``per_rank_result`` of the ranks' judgements: the flagged ranks under ``flagged_key``,
    their listed events under ``listed_key``, the datapoints summed over the ranks' figures
    (None: one per rank); "not evaluated" with ``nothing_judged`` when no rank was judged."""
    if not judgements:
        return not_evaluated(rule, params, nothing_judged)
    flagged = [str(j.rank) for j in judgements if j.flagged]
    evidence: dict[str, Any] = {flagged_key: flagged}
    if listed_key is not None:
        evidence[listed_key] = [item for j in judgements for item in j.listed]
    return per_rank_result(
        rule,
        params,
        {str(j.rank): j.figures for j in judgements},
        flagged,
        datapoints=sum(datapoints(j.figures) for j in judgements)
        if datapoints
        else len(judgements),
        evidence=evidence,
        advice=advice,
        time_ranges=[r for j in judgements for r in j.time_ranges],
    )
