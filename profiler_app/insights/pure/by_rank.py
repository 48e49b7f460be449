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
    complete_steps_rows,
    drop_last_step,
)
from profiler_app.analysis.framework import framework_from_events
from profiler_app.insights.pure.rules.base import RULE_ERRORS, UNREADABLE, RuleResult, not_evaluated
from profiler_app.insights.pure.rules.recommendations import BY_RANK, RECOMMENDATIONS
from profiler_app.insights.pure.rules.recommendations.inputs import RankJudgement
from profiler_app.traces.window import COMPLETE_STEPS, rows_in

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RankResult:
    """What the insights keep of one rank (``read_rank``): its analyses without its events and
    launches, its judgement by each recommendation (None: nothing to judge there), the
    recommendations that could not read it, its framework time and its collective calls. Small
    next to its events, and all the job's results need of the rank: it is kept and read again
    (``insights.rank_results``)."""

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
    rows_in(window)  # an unknown window is an error, not the whole trace
    # As ``analyze`` cuts it, once for the analyses and the collective calls of both windows;
    # the cut to complete steps carries over the GPU ops the calls derived (``restricted``).
    captured = captured_only(trace)
    complete_rows = complete_steps_rows(captured)
    collective_calls = calls_in_windows(captured, complete_rows)
    covered = drop_last_step(captured, complete_rows) if window == COMPLETE_STEPS else captured
    mine = analyze_covered([covered], params)
    judgements: dict[str, RankJudgement | None] = {}
    unreadable = set()
    for name, rule in BY_RANK.items():
        try:
            judgements[name] = rule.judge_rank(covered, mine, _params(params, name))
        except RULE_ERRORS:
            log.exception("Rule %s failed on rank %s", name, trace.rank)
            unreadable.add(name)
    return RankResult(
        trace.rank,
        # The launches are judged here, and no page shows them: a third of what is kept. Copied
        # empty: a slice of them would keep every launch of the rank (and the pairs they were
        # made from) in memory until the job is done.
        replace(mine, window=(), launches=mine.launches.iloc[:0].copy()),
        judgements,
        frozenset(unreadable),
        framework_from_events(trace),
        collective_calls,
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
    """What a rank's result depends on besides its events, as text: the window, and the
    parameters of the analyses and recommendations (not of the system rules, which read no
    rank)."""
    read = [*ANALYSIS_PARAMETERS, *BY_RANK]
    return repr((window, [(name, params.get(name)) for name in read]))


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
