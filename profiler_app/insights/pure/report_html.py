"""The downloadable profiler report: one HTML file with its charts inline (SVG, no script)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from html import escape
from typing import Any

from profiler_app.history.pure.regression_html import render_verdict
from profiler_app.insights.pure import svg
from profiler_app.insights.pure.report import (
    ISSUE,
    NOT_EVALUATED,
)
from profiler_app.insights.pure.report_analyses import render_analyses

STATUS_TEXT = {ISSUE: "Issue found", "no_issue": "No issue", NOT_EVALUATED: "Not evaluated"}
# The report draws at most this many rows (GPUs, nodes) per chart.
MAX_ROWS = 32
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:960px;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
.issue_found{color:#b3261e;font-weight:600}.no_issue{color:#1e7b34}.not_evaluated{color:#777}
.advice{background:#fff8e1;border-left:4px solid #f2a900;padding:.5em 1em}
code{font-size:12px}
@media print{body{max-width:none;margin:0}h1,h2{break-after:avoid}table,svg{break-inside:avoid}}
"""


def _gpu_label(node: str, gpu: str) -> str:
    return f"{node} GPU {gpu}"


def _bottleneck_charts(rule: dict) -> list[str]:
    shares = rule["evidence"].get("bottleneck_pct_per_scan", [])
    return (
        [
            svg.line_chart(
                "Bottleneck share (%) at each scan",
                shares,
                threshold=float(rule["params"]["threshold"]),
            )
        ]
        if shares
        else []
    )


def _per_gpu_boxes(nodes: dict, key: str | None = None) -> tuple[list[str], list[dict]]:
    labels, boxes = [], []
    for node, gpus in nodes.items():
        for gpu, stats in (gpus.get("gpus", gpus)).items():
            box = stats.get(key, {}) if key else stats
            if isinstance(box, dict) and "p5" in box:
                labels.append(_gpu_label(node, gpu))
                boxes.append(box)
    return labels[:MAX_ROWS], boxes[:MAX_ROWS]


def _low_gpu_charts(rule: dict) -> list[str]:
    labels, boxes = _per_gpu_boxes(rule["evidence"].get("nodes", {}))
    p = rule["params"]
    return (
        [
            svg.box_chart(
                "GPU utilisation (p5, p25, p50, p75, p95)",
                labels,
                boxes,
                thresholds=((p["threshold_p95"], "p95"), (p["threshold_p5"], "p5")),
            )
        ]
        if labels
        else []
    )


def _batch_size_charts(rule: dict) -> list[str]:
    nodes = rule["evidence"].get("nodes", {})
    p = rule["params"]
    charts = []
    for key, text, limit in (
        ("util", "GPU utilisation", p["gpu_threshold_p95"]),
        ("memory", "GPU memory in use", p["gpu_memory_threshold_p95"]),
    ):
        labels, boxes = _per_gpu_boxes(nodes, key)
        if labels:
            charts.append(svg.box_chart(text, labels, boxes, thresholds=((limit, "p95"),)))
    cpu = [(node, v["cpu"]) for node, v in nodes.items() if v.get("cpu")]
    if cpu:
        charts.append(
            svg.box_chart(
                "CPU utilisation per node",
                [n for n, _ in cpu],
                [b for _, b in cpu],
                thresholds=((p["cpu_threshold_p95"], "p95"),),
            )
        )
    return charts


def _memory_charts(rule: dict) -> list[str]:
    labels, boxes = _per_gpu_boxes(rule["evidence"].get("nodes", {}))
    return [svg.box_chart("GPU memory in use (%)", labels, boxes)] if labels else []


def _balance_charts(rule: dict) -> list[str]:
    gpus = rule["evidence"].get("gpus", {})
    labels = list(gpus)[:MAX_ROWS]
    rows = [gpus[label]["histogram"] for label in labels]
    return (
        [svg.heatmap("Utilisation histogram per GPU", labels, rows, "GPU utilisation 0–100 %")]
        if labels
        else []
    )


def _system_charts(rule: dict) -> list[str]:
    charts = []
    for node, metrics in list(rule["evidence"].get("nodes", {}).items())[:MAX_ROWS]:
        pct = {m: s for m, s in metrics.items() if m.endswith("_pct")}
        if pct:
            charts.append(
                svg.box_chart(
                    f"{node}: system metrics (min, p50, p95, max)",
                    list(pct),
                    [
                        {
                            "p5": s["min"],
                            "p25": s["p50"],
                            "p50": s["p50"],
                            "p75": s["p95"],
                            "p95": s["max"],
                        }
                        for s in pct.values()
                    ],
                )
            )
    return charts


def _init_charts(rule: dict) -> list[str]:
    e = rule["evidence"]
    parts = [
        (label, e[key])
        for label, key in (
            ("initialization", "initialization_s"),
            ("training loop", "training_loop_s"),
            ("finalization", "finalization_s"),
        )
        if e.get(key) is not None
    ]
    return [svg.stacked_bar("Job time", parts, " s")] if parts else []


def _framework_charts(rule: dict) -> list[str]:
    phases = rule["evidence"].get("phases", {})
    if not phases:
        return []
    names = list(phases)
    return [
        svg.bar_chart(
            "Share of time per phase (CPU/GPU and annotated phases separately)",
            names,
            [phases[n]["pct"] for n in names],
            unit="%",
            top=100,
        )
    ]


def _step_charts(rule: dict) -> list[str]:
    charts = []
    for label, group in list(rule["evidence"].get("groups", {}).items())[:4]:
        hist = group["histogram"]
        edges_ms = [e / 1e6 for e in hist["edges_ns"]]
        charts.append(
            svg.histogram(
                f"{label}: step durations (outliers left out)", hist["counts"], edges_ms, " ms"
            )
        )
    return charts


CHARTS: dict[str, Callable[[dict], list[str]]] = {
    "BatchSize": _batch_size_charts,
    "CPUBottleneck": _bottleneck_charts,
    "IOBottleneck": _bottleneck_charts,
    "GPUMemoryIncrease": _memory_charts,
    "LoadBalancing": _balance_charts,
    "LowGPUUtilization": _low_gpu_charts,
    "OverallSystemUsage": _system_charts,
    "MaxInitializationTime": _init_charts,
    "OverallFrameworkMetrics": _framework_charts,
    "StepOutlier": _step_charts,
}


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}"
    return escape(str(value))


def _evidence_table(evidence: Mapping[str, Any]) -> str:
    """The evidence's scalar values; nested details stay in the JSON form."""
    rows = [
        f"<tr><th>{escape(k)}</th><td>{_value(v)}</td></tr>"
        for k, v in evidence.items()
        if isinstance(v, int | float | str) and not isinstance(v, bool)
    ]
    return f"<table>{''.join(rows)}</table>" if rows else ""


def _where(time_range: dict) -> str:
    if time_range["rank"] >= 0:
        return f"rank {time_range['rank']}"
    gpu = "" if time_range["device"] < 0 else f" / {time_range['device']}"
    return (time_range["node"] or "job") + gpu


def _ranges(rule: dict, origin_ns: int, base_url: str) -> str:
    if not rule["time_ranges"]:
        return ""
    items = "".join(
        f'<li><a href="{escape(base_url.rstrip("/") + t["timeline_url"])}">{escape(_where(t))}: '
        f"{(t['start_ns'] - origin_ns) / 1e9:,.1f} s to {(t['end_ns'] - origin_ns) / 1e9:,.1f} s "
        f"({(t['end_ns'] - t['start_ns']) / 1e9:,.1f} s)</a></li>"
        for t in rule["time_ranges"]
    )
    return f"<p>Time ranges (open the timeline there):</p><ul>{items}</ul>"


def _rule_section(rule: dict, origin_ns: int, base_url: str) -> str:
    status = rule["status"]
    params = ", ".join(f"{escape(k)}={_value(v)}" for k, v in rule["params"].items())
    parts = [
        f'<h2 id="{escape(rule["rule"])}">{escape(rule["rule"])} — '
        f'<span class="{status}">{STATUS_TEXT[status]}</span></h2>',
        f"<p>{escape(rule['description'])}</p>",
        f"<p><code>{params}</code></p>",
    ]
    if status == NOT_EVALUATED:
        parts.append(f"<p>{escape(rule['not_evaluated_reason'])}</p>")
        return "".join(parts)
    parts.append(
        f"<p>Evaluated {rule['evaluated']} times, triggered {rule['trigger_count']} times; "
        f"{rule['violations']} violations in {rule['datapoints']} data points.</p>"
    )
    if rule.get("caused_by"):
        cause = escape(rule["caused_by"])
        parts.append(f'<p>Caused by <a href="#{cause}">{cause}</a>.</p>')
    parts.append(f'<p class="advice">{escape(rule["recommendation"])}</p>')
    parts.append(_evidence_table(rule["evidence"]))
    parts += CHARTS[rule["rule"]](rule) if rule["rule"] in CHARTS else []
    parts.append(_ranges(rule, origin_ns, base_url))
    return "".join(parts)


def render_html(
    data: Mapping[str, Any],
    base_url: str = "",
    job_info: Mapping[str, str] | None = None,
    analyses: Mapping[str, Any] | None = None,
    verdict: Mapping[str, Any] | None = None,
) -> str:
    """The whole report page from the report's JSON (``report_json``, its timeline links
    relative). ``base_url`` makes those links absolute (the file is opened from disk);
    ``job_info`` adds lines such as instance type or framework; ``analyses``
    (``insights.summaries.analyses_json``) adds the trace analyses; ``verdict`` the run's
    regression verdict (``history.queries.stored_verdict``)."""
    summary_rows = "".join(
        f'<tr><td><a href="#{escape(r["rule"])}">{escape(r["rule"])}</a></td>'
        f'<td class="{r["status"]}">{STATUS_TEXT[r["status"]]}</td>'
        f"<td>{r['trigger_count']}</td><td>{r['evaluated']}</td></tr>"
        for r in [*data["rules"], *data["recommendations"]]
    )
    info = "".join(
        f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>"
        for k, v in (job_info or {}).items()
    )
    first_range = min((t["start_ns"] for r in data["rules"] for t in r["time_ranges"]), default=0)
    known_origin = data["origin_ns"] is not None
    origin_ns = data["origin_ns"] if known_origin else first_range
    recommendations = "".join(
        _rule_section(r, origin_ns, base_url) for r in data["recommendations"]
    )
    origin = "the job's start" if known_origin else "the first time range"
    title = f"Profiler report — {data['job']}" if data["job"] else "Profiler report"
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>"
        f"{f'<table>{info}</table>' if info else ''}"
        f"<table><tr><th>Rule</th><th>Status</th><th>Triggered</th><th>Evaluated</th></tr>{summary_rows}</table>"
        + f"<p>Times are seconds from {origin}.</p>"
        + "".join(_rule_section(r, origin_ns, base_url) for r in data["rules"])
        + (f"<h1>Recommendations from the trace</h1>{recommendations}" if recommendations else "")
        + (render_verdict(verdict) if verdict else "")
        + render_analyses(analyses or {})
        + "</body></html>"
    )
