"""A job's trace analyses, recommendations, framework time and collective calls, reading its
ranks one at a time: what the insights keep of a rank is its tables and judgements, never
its events, so a 1,024-rank job needs the memory of one rank, not of all. Each result equals
the one over all ranks at once (``analyze`` and ``recommend``). Pure: no Django."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from profiler_app.analysis import (
    ANALYSIS_PARAMETERS,
    RankTables,
    RankTrace,
    TraceAnalyses,
    analyze_covered,
)
from profiler_app.analysis.cluster import calls_in_windows, match_calls_by_window
from profiler_app.analysis.events import (
    captured_only,
)
from profiler_app.analysis.framework import framework_from_events
from profiler_app.insights.pure.rules.base import RULE_ERRORS, UNREADABLE, RuleResult, not_evaluated
from profiler_app.insights.pure.rules.recommendations import BY_RANK, RECOMMENDATIONS
from profiler_app.insights.pure.rules.recommendations.inputs import RankInputs, RankJudgement
from profiler_app.traces.window import COMPLETE_STEPS, rows_in

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RankFacts:
    """What the insights read of one rank in a window, whatever the recommendations'
    parameters (``read_facts``): its analyses without its events and launches (with the
    analysis parameters), what each recommendation read of it (None: nothing to judge there),
    the recommendations that could not read it, its framework time and its collective calls.
    Small next to its events, and all the job's results need of the rank: read once by a
    worker of the parses, kept (``insights.rank_results``), and judged again with each choice
    of the recommendations' parameters without reading the rank."""

    rank: int
    analyses: TraceAnalyses
    inputs: dict[str, RankInputs | None]
    unreadable: frozenset[str]
    framework: pd.DataFrame
    collective_calls: dict[str, pd.DataFrame]


@dataclass(frozen=True)
class RankReading:
    """What each recommendation read of one rank (None: nothing to judge there) and the
    recommendations that could not read it: all a change of their parameters judges again."""

    rank: int
    inputs: dict[str, RankInputs | None]
    unreadable: frozenset[str]


@dataclass(frozen=True)
class JobFacts:
    """What the insights need of a job's ranks besides its analyses (``combine_facts``): each
    rank's framework time and readings, and the collective waits. Judged again with each
    choice of the recommendations' parameters (``judge_job``) without a rank."""

    framework: pd.DataFrame  # each rank's ``framework_from_events``, one after another
    collective_waits: dict[str, pd.DataFrame]  # ``collective_waits_by_window``
    readings: list[RankReading]


@dataclass(frozen=True)
class JobAnalyses:
    # Over every rank; its ``window`` and ``launches`` are empty (each rank's were judged).
    analyses: TraceAnalyses
    found: tuple[RuleResult, ...]  # the recommendations
    framework: pd.DataFrame  # each rank's ``framework_from_events``, one after another
    collective_waits: dict[str, pd.DataFrame]  # ``collective_waits_by_window``


def insights_by_rank(
    traces: Iterable[RankTrace], params: Mapping[str, Any], window: str = COMPLETE_STEPS
) -> JobAnalyses | None:
    """Every rank's facts (``read_facts``), a rank at a time from ``traces`` (in rank order:
    the tables keep it), combined and judged into the job's; None for a job with no rank."""
    combined = combine_facts(_each_read(traces, params, window))
    if combined is None:
        return None
    tables, facts = combined
    analyses = tables.analyses()
    return JobAnalyses(analyses, judge_job(facts, params), facts.framework, facts.collective_waits)


def _each_read(
    traces: Iterable[RankTrace], params: Mapping[str, Any], window: str
) -> Iterator[RankFacts]:
    for trace in traces:
        facts = read_facts(in_memory(trace), params, (window,))[window]
        del trace  # before the next rank is read, not after
        yield facts


def in_memory(trace: RankTrace) -> Callable[[], RankTrace]:
    """A trace read already, as ``read_facts`` takes one."""
    return lambda: trace


def read_facts(
    load: Callable[[], RankTrace], params: Mapping[str, Any], windows: Iterable[str]
) -> dict[str, RankFacts]:
    """One rank's facts in each of ``windows``, with the analysis parameters of ``params``.
    ``load`` reads the rank's trace, once; the trace is let go as soon as no window needs it,
    so that the complete-steps window, cut from it last, is read without the events held
    twice (a 2.8M-event rank: 1.2 GB at the peak, 0.9 GB so)."""
    windows = list(windows)
    for window in windows:
        rows_in(window)  # an unknown window is an error, not the whole trace
    trace = load()
    rank = trace.rank
    framework = framework_from_events(trace)
    # As ``analyze`` cuts it, once for the analyses and the collective calls of both windows;
    # the cut to complete steps carries over the GPU ops the calls derived (``restricted``).
    captured = captured_only(trace)
    del trace
    collective_calls = calls_in_windows(captured)

    def facts_of(covered: RankTrace) -> RankFacts:
        mine = analyze_covered([covered], params)
        inputs: dict[str, RankInputs | None] = {}
        unreadable = set()
        for name, rule in BY_RANK.items():
            try:
                inputs[name] = rule.read(covered, mine)
            except RULE_ERRORS:
                log.exception("Rule %s failed on rank %s", name, rank)
                unreadable.add(name)
        # The launches were read here, and no page shows them: a third of what is kept.
        # Copied empty: a slice of them would keep every launch of the rank (and the pairs
        # they were made from) in memory until the job is done.
        kept = replace(mine, window=(), launches=_empty(mine.launches))
        return RankFacts(rank, kept, inputs, frozenset(unreadable), framework, collective_calls)

    found = {window: facts_of(captured) for window in windows if window != COMPLETE_STEPS}
    if COMPLETE_STEPS in windows:
        covered = captured.complete_steps()
        del captured  # the cut is all that is left to read
        found[COMPLETE_STEPS] = facts_of(covered)
    return {window: found[window] for window in windows}


def combine_facts(
    ranks: Iterable[RankFacts], fold: Mapping[str, Callable[[pd.DataFrame], None]] | None = None
) -> tuple[RankTables, JobFacts] | None:
    """The job's analysis tables (to be combined; those named in ``fold`` handed to it, as in
    ``RankTables.gather``) and facts from its ranks' facts (in rank order), a rank at a time;
    None for a job with no rank."""
    framework, calls, readings = [], [], []

    def each_rank_analyses() -> Iterator[TraceAnalyses]:
        for facts in ranks:
            framework.append(facts.framework)
            calls.append((facts.rank, facts.collective_calls))
            readings.append(RankReading(facts.rank, facts.inputs, facts.unreadable))
            yield facts.analyses

    tables = RankTables.gather(each_rank_analyses(), fold)
    if tables is None:
        return None
    job = JobFacts(pd.concat(framework, ignore_index=True), match_calls_by_window(calls), readings)
    return tables, job


def _empty(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s columns without its rows, nor their categories (a rank's kernel names)."""
    empty = frame.iloc[:0].copy()
    for column in empty.select_dtypes("category"):
        empty[column] = empty[column].cat.remove_unused_categories()
    return empty


def judge_job(facts: JobFacts, params: Mapping[str, Any]) -> tuple[RuleResult, ...]:
    """Each recommendation's result over the job: what it read of each rank judged with
    ``params`` (no event is read), the ranks' judgements combined."""
    found = []
    for name, rule in BY_RANK.items():
        chosen = _params(params, name)
        judged: list[RankJudgement] = []
        unreadable = False
        for reading in facts.readings:
            inputs = reading.inputs.get(name)
            if name in reading.unreadable:
                unreadable = True
            elif inputs is not None:
                try:
                    judged.append(rule.judge(inputs, chosen))
                except RULE_ERRORS:
                    log.exception("Rule %s failed on rank %s", name, reading.rank)
                    unreadable = True
        found.append(_combine(name, judged, params, unreadable))
    return tuple(found)


def depends_on(params: Mapping[str, Any], window: str) -> str:
    """What a rank's facts depend on besides its events, as text: the window and the analysis
    parameters (not the recommendations', which judge the facts, nor the system rules', which
    read no rank)."""
    return repr((window, [(name, params.get(name)) for name in ANALYSIS_PARAMETERS]))


def _params(params: Mapping[str, Any], name: str) -> Any:
    return params.get(name) or RECOMMENDATIONS[name].params()


def _combine(
    name: str, judgements: list[RankJudgement], params: Mapping[str, Any], unreadable: bool
) -> RuleResult:
    """The job's result of one recommendation, as ``RuleSpec.judge`` gives it."""
    chosen = _params(params, name)
    if not unreadable:
        try:
            return BY_RANK[name].combine(judgements, chosen)
        except RULE_ERRORS:
            log.exception("Rule %s failed", name)
    return not_evaluated(name, chosen, UNREADABLE)
