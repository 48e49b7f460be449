"""ProfilerReport: every rule over one job, as JSON and as a self-contained HTML page.

Like SageMaker's ProfilerReport rule, it takes ``<Rule>_<param>`` overrides for any rule and
is regenerated whenever the job's data or parameters change (the caller decides when).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from profiler_app.insights.frames import JobData
from profiler_app.insights.rules import RULES, evaluate_rules, params_from_overrides
from profiler_app.insights.rules.base import RuleResult, TimeRange

ISSUE, NO_ISSUE, NOT_EVALUATED = "issue_found", "no_issue", "not_evaluated"


@dataclass(frozen=True)
class ProfilerReport:
    job_name: str
    results: tuple[RuleResult, ...]
    overrides: Mapping[str, Any]
    origin_ns: int | None = None  # the job's start: times in the report are shown from it

    def status(self, result: RuleResult) -> str:
        if result.not_evaluated_reason is not None:
            return NOT_EVALUATED
        return ISSUE if result.triggered else NO_ISSUE


def profiler_report(
    job: JobData, overrides: Mapping[str, Any] | None = None, job_name: str = ""
) -> ProfilerReport:
    """Runs all rules with the defaults and ``overrides`` (ValueError on a bad override)."""
    params = params_from_overrides(overrides)
    return ProfilerReport(
        job_name, tuple(evaluate_rules(job, params)), dict(overrides or {}), job.data_start_ns()
    )


def timeline_url(time_range: TimeRange, base_url: str = "") -> str:
    """Where the UI's timeline opens on ``time_range`` (device -1 = the whole node)."""
    query = {
        "start_ns": time_range.start_ns,
        "end_ns": time_range.end_ns,
        "node": time_range.node,
    }
    if time_range.device >= 0:
        query["device"] = time_range.device
    return f"{base_url.rstrip('/')}/timeline?{urlencode(query)}"


def report_json(report: ProfilerReport, base_url: str = "") -> dict[str, Any]:
    """The report as JSON-ready data (what the API returns)."""
    rules = []
    for r in report.results:
        rules.append(
            {
                "rule": r.rule,
                "description": RULES[r.rule].summary,
                "status": report.status(r),
                "triggered": r.triggered,
                "evaluated": r.evaluated,
                "trigger_count": r.trigger_count,
                "violations": r.violations,
                "datapoints": r.datapoints,
                "not_evaluated_reason": r.not_evaluated_reason,
                "recommendation": r.recommendation,
                "params": dict(r.params),
                "evidence": dict(r.evidence),
                "time_ranges": [
                    {**t._asdict(), "timeline_url": timeline_url(t, base_url)}
                    for t in r.time_ranges
                ],
            }
        )
    statuses = [report.status(r) for r in report.results]
    return {
        "job": report.job_name,
        "origin_ns": report.origin_ns,
        "overrides": dict(report.overrides),
        "summary": {
            status: [r.rule for r, s in zip(report.results, statuses, strict=True) if s == status]
            for status in (ISSUE, NO_ISSUE, NOT_EVALUATED)
        },
        "rules": rules,
    }
