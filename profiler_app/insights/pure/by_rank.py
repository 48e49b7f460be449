"""A job's trace analyses, recommendations, framework time and collective calls, reading its
ranks one at a time: what the insights keep of a rank is its tables and judgements, never
its events, so a 1,024-rank job needs the memory of one rank, not of all. Each result equals
the one over all ranks at once (``analyze`` and ``recommend``). Pure: no Django."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from profiler_app.insights.pure.analyses import (
    RankTrace,
    TraceAnalyses,
    analyze,
    combine_analyses,
)
from profiler_app.insights.pure.analyses.cluster import (
    collective_calls_by_window,
    match_calls_by_window,
)
from profiler_app.insights.pure.analyses.framework import framework_from_events
from profiler_app.insights.pure.rules.base import RULE_ERRORS, UNREADABLE, RuleResult, not_evaluated
from profiler_app.insights.pure.rules.recommendations import BY_RANK, RECOMMENDATIONS
from profiler_app.insights.pure.rules.recommendations.inputs import RankJudgement
from profiler_app.traces.window import COMPLETE_STEPS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobAnalyses:
    analyses: TraceAnalyses  # over every rank (its ``window`` empty: the events are not kept)
    found: tuple[RuleResult, ...]  # the recommendations
    framework: list[pd.DataFrame]  # each rank's ``framework_from_events``
    collective_waits: dict[str, pd.DataFrame]  # ``collective_waits_by_window``


def insights_by_rank(
    traces: Iterable[RankTrace], params: Mapping[str, Any], window: str = COMPLETE_STEPS
) -> JobAnalyses | None:
    """Every rank's analyses and judgements, a rank at a time from ``traces`` (in rank order:
    the tables keep it), combined into the job's; None for a job with no rank."""
    analyses: list[TraceAnalyses] = []
    judgements: dict[str, list[RankJudgement]] = {name: [] for name in BY_RANK}
    unreadable: set[str] = set()
    framework: list[pd.DataFrame] = []
    calls = []
    for trace in traces:
        mine = _judge_rank(trace, params, window, judgements, unreadable)
        framework.append(framework_from_events(trace))
        calls.append((trace.rank, collective_calls_by_window(trace)))
        analyses.append(mine)
        del trace  # before the next rank is read, not after
    if not analyses:
        return None
    found = tuple(_combine(name, judgements[name], params, name in unreadable) for name in BY_RANK)
    return JobAnalyses(combine_analyses(analyses), found, framework, match_calls_by_window(calls))


def _judge_rank(
    trace: RankTrace,
    params: Mapping[str, Any],
    window: str,
    judgements: dict[str, list[RankJudgement]],
    unreadable: set[str],
) -> TraceAnalyses:
    """The rank's analyses (without its events); its judgements go to ``judgements``, and a
    recommendation that cannot read it to ``unreadable`` (judged no further)."""
    mine = analyze([trace], params, window=window)
    [covered] = mine.window
    for name, rule in BY_RANK.items():
        if name in unreadable:
            continue
        try:
            judged = rule.judge_rank(covered, mine, _params(params, name))
        except RULE_ERRORS:
            log.exception("Rule %s failed on rank %s", name, trace.rank)
            unreadable.add(name)
            continue
        if judged is not None:
            judgements[name].append(judged)
    return replace(mine, window=())


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
