"""A job's trace analyses, recommendations, framework time and collective calls, reading its
ranks one at a time: what the insights keep of a rank is its tables and judgements, never
its events, so a 1,024-rank job needs the memory of one rank, not of all. Each result equals
the one over all ranks at once (``analyze`` and ``recommend``). Pure: no Django."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from profiler_app.analysis import (
    ANALYSIS_PARAMETERS,
    RankTrace,
    TraceAnalyses,
    analyze_covered,
    combine_analyses,
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
class RankResult:
    """One rank's facts judged (``judge_facts``): its judgement by each recommendation (None:
    nothing to judge there) and the recommendations that could not read or judge it."""

    rank: int
    analyses: TraceAnalyses
    judgements: dict[str, RankJudgement | None]
    unreadable: frozenset[str]
    framework: pd.DataFrame
    collective_calls: dict[str, pd.DataFrame]


@dataclass(frozen=True)
class JobAnalyses:
    # Over every rank; its ``window`` and ``launches`` are empty (each rank's were judged).
    analyses: TraceAnalyses
    found: tuple[RuleResult, ...]  # the recommendations
    framework: list[pd.DataFrame]  # each rank's ``framework_from_events``
    collective_waits: dict[str, pd.DataFrame]  # ``collective_waits_by_window``


def insights_by_rank(
    traces: Iterable[RankTrace], params: Mapping[str, Any], window: str = COMPLETE_STEPS
) -> JobAnalyses | None:
    """Every rank's result (``read_rank``), a rank at a time from ``traces`` (in rank order: the
    tables keep it), combined into the job's; None for a job with no rank."""
    return combine_ranks(_each_read(traces, params, window), params)


def _each_read(
    traces: Iterable[RankTrace], params: Mapping[str, Any], window: str
) -> Iterator[RankResult]:
    for trace in traces:
        result = read_rank(trace, params, window)
        del trace  # before the next rank is read, not after
        yield result


def read_rank(trace: RankTrace, params: Mapping[str, Any], window: str) -> RankResult:
    """One rank's analyses and judgements, over ``window``, with ``params``."""
    return judge_facts(read_facts(trace, params, (window,))[window], params)


def read_facts(
    trace: RankTrace, params: Mapping[str, Any], windows: Iterable[str]
) -> dict[str, RankFacts]:
    """One rank's facts in each of ``windows``, with the analysis parameters of ``params``."""
    windows = list(windows)
    for window in windows:
        rows_in(window)  # an unknown window is an error, not the whole trace
    # As ``analyze`` cuts it, once for the analyses and the collective calls of both windows;
    # the cut to complete steps carries over the GPU ops the calls derived (``restricted``).
    captured = captured_only(trace)
    collective_calls = calls_in_windows(captured)
    framework = framework_from_events(trace)
    found = {}
    for window in windows:
        covered = captured.complete_steps() if window == COMPLETE_STEPS else captured
        mine = analyze_covered([covered], params)
        inputs: dict[str, RankInputs | None] = {}
        unreadable = set()
        for name, rule in BY_RANK.items():
            try:
                inputs[name] = rule.read(covered, mine)
            except RULE_ERRORS:
                log.exception("Rule %s failed on rank %s", name, trace.rank)
                unreadable.add(name)
        # The launches were read here, and no page shows them: a third of what is kept.
        # Copied empty: a slice of them would keep every launch of the rank (and the pairs
        # they were made from) in memory until the job is done.
        kept = replace(mine, window=(), launches=mine.launches.iloc[:0].copy())
        found[window] = RankFacts(
            trace.rank, kept, inputs, frozenset(unreadable), framework, collective_calls
        )
        del covered, mine
    return found


def judge_facts(facts: RankFacts, params: Mapping[str, Any]) -> RankResult:
    """The rank's facts judged by each recommendation with ``params``: no event is read."""
    judgements: dict[str, RankJudgement | None] = {}
    unreadable = set(facts.unreadable)
    for name, rule in BY_RANK.items():
        found = facts.inputs.get(name)
        if name in unreadable or found is None:
            judgements[name] = None
            continue
        try:
            judgements[name] = rule.judge(found, _params(params, name))
        except RULE_ERRORS:
            log.exception("Rule %s failed on rank %s", name, facts.rank)
            unreadable.add(name)
    return RankResult(
        facts.rank,
        facts.analyses,
        judgements,
        frozenset(unreadable),
        facts.framework,
        facts.collective_calls,
    )


def combine_ranks(results: Iterable[RankResult], params: Mapping[str, Any]) -> JobAnalyses | None:
    """The job's analyses, recommendations, framework time and collective waits from its ranks'
    results (in rank order); None for a job with no rank."""
    ranks = list(results)
    if not ranks:
        return None
    found = []
    for name in BY_RANK:
        judged = [j for r in ranks if (j := r.judgements.get(name)) is not None]
        found.append(_combine(name, judged, params, any(name in r.unreadable for r in ranks)))
    return JobAnalyses(
        combine_analyses([r.analyses for r in ranks]),
        tuple(found),
        [r.framework for r in ranks],
        match_calls_by_window([(r.rank, r.collective_calls) for r in ranks]),
    )


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
