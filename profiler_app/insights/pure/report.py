"""ProfilerReport: every rule over one job, as JSON and as a self-contained HTML page.

Like SageMaker's ProfilerReport rule, it takes ``<Rule>_<param>`` overrides for any rule and
is regenerated whenever the job's data or parameters change (the caller decides when).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from profiler_app.analysis.frames import JobData
from profiler_app.insights.pure.rules import RULES, evaluate_rules, params_from_overrides
from profiler_app.insights.pure.rules.base import RuleResult
from profiler_app.insights.pure.rules.causes import agreeing
from profiler_app.insights.pure.rules.recommendations import RECOMMENDATIONS
from profiler_app.profiles.pure.links import timeline_url

ISSUE, NO_ISSUE, NOT_EVALUATED = "issue_found", "no_issue", "not_evaluated"


@dataclass(frozen=True)
class ProfilerReport:
    job_name: str
    results: tuple[RuleResult, ...]
    overrides: Mapping[str, Any]
    origin_ns: int | None = None  # the job's start: times in the report are shown from it
    recommendations: tuple[RuleResult, ...] = ()  # from the trace (``rules.recommendations``)
    job_id: int | None = None  # for the timeline links

    def status(self, result: RuleResult) -> str:
        if result.not_evaluated_reason is not None:
            return NOT_EVALUATED
        return ISSUE if result.triggered else NO_ISSUE


def profiler_report(
    job: JobData,
    overrides: Mapping[str, Any] | None = None,
    job_name: str = "",
    recommendations: tuple[RuleResult, ...] = (),
    job_id: int | None = None,
) -> ProfilerReport:
    """Runs all rules with the defaults and ``overrides`` (ValueError on a bad override);
    ``recommendations`` were judged from the job's trace (``recommend``); the rules are told
    with them (``causes.agreeing``)."""
    params = params_from_overrides(overrides)
    return ProfilerReport(
        job_name,
        tuple(agreeing(evaluate_rules(job, params), recommendations)),
        dict(overrides or {}),
        job.data_start_ns(),
        recommendations,
        job_id,
    )


def report_json(report: ProfilerReport, base_url: str = "") -> dict[str, Any]:
    """The report as JSON-ready data (what the API returns)."""
    rules = [_result_json(report, r, RULES[r.rule].summary, base_url) for r in report.results]
    recommendations = [
        _result_json(report, r, RECOMMENDATIONS[r.rule].summary, base_url)
        for r in report.recommendations
    ]
    everything = (*report.results, *report.recommendations)
    statuses = [report.status(r) for r in everything]
    return {
        "job": report.job_name,
        "origin_ns": report.origin_ns,
        "overrides": dict(report.overrides),
        "summary": {
            status: [r.rule for r, s in zip(everything, statuses, strict=True) if s == status]
            for status in (ISSUE, NO_ISSUE, NOT_EVALUATED)
        },
        "rules": rules,
        "recommendations": recommendations,
    }


def _result_json(
    report: ProfilerReport, r: RuleResult, description: str, base_url: str
) -> dict[str, Any]:
    return {
        "rule": r.rule,
        "description": description,
        "status": report.status(r),
        "triggered": r.triggered,
        "evaluated": r.evaluated,
        "trigger_count": r.trigger_count,
        "violations": r.violations,
        "datapoints": r.datapoints,
        "not_evaluated_reason": r.not_evaluated_reason,
        "recommendation": r.recommendation,
        "caused_by": r.caused_by,
        "params": dict(r.params),
        "evidence": dict(r.evidence),
        "time_ranges": [
            {**t._asdict(), "timeline_url": timeline_url(t, base_url, report.job_id)}
            for t in r.time_ranges
        ],
    }
