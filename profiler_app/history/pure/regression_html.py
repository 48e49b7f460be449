"""The regression verdict as a section of the HTML report (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

STATUS_TEXT = {
    "regression": "Regression",
    "no_regression": "No regression",
    "unjudged": "Could not judge",
    "pending": "Not judged yet",
}
REPORT_CAUSES = 10


def render_verdict(verdict: Mapping[str, Any]) -> str:
    """The verdict (``history.queries.stored_verdict``'s document): against which run, why,
    the test, and the causes per step per rank."""
    status = STATUS_TEXT.get(verdict["status"], verdict["status"])
    series = f" of series {escape(verdict['series'])}" if verdict.get("series") else ""
    against = f" against {escape(verdict['baseline_name'])}" if verdict.get("baseline_name") else ""
    parts = [
        f"<h1>Regression verdict{series}</h1>",
        f"<p><strong>{escape(status)}</strong>{against}. {escape(verdict['reason'])}</p>",
    ]
    test = verdict.get("test")
    if test:
        parts.append(
            f"<p>{escape(test['name'])}: U = {test['u']:g}, p = {test['p_value']:.3g} "
            f"({escape(test['method'])}, {test['n_run']} steps against {test['n_baseline']}).</p>"
        )
    causes = verdict.get("causes") or []
    if causes:
        rows = "".join(
            f"<tr><td>{escape(c['name'])}</td><td>{escape(c['kind'])}</td>"
            f"<td>{c['baseline_ns'] / 1e6:.2f}</td><td>{c['run_ns'] / 1e6:.2f}</td>"
            f"<td>{c['step_share_pct']:.1f} %</td></tr>"
            for c in causes[:REPORT_CAUSES]
        )
        parts.append(
            "<table><tr><th>Cause</th><th>Kind</th><th>Baseline (ms per step per rank)</th>"
            f"<th>Run (ms per step per rank)</th><th>Of the median step</th></tr>{rows}</table>"
        )
    return "".join(parts)
