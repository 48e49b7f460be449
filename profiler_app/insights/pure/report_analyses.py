"""The trace analyses' part of the downloadable report: tables and inline SVG charts of what the
Insights page shows (``insights.summaries.analyses_json``), for the same window and parameters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from profiler_app.insights.pure import svg

# Rows per table in the report; the Insights page and CSV export have them all.
MAX_TABLE_ROWS = 40
NS_PER_MS = 1e6


def _cell(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # nanoseconds and counts that went through a float column
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:,.4g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return escape("" if value is None else str(value))


def _table(title: str, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    if not rows:
        return f"<h3>{escape(title)}</h3><p>None in this profile.</p>"
    head = "".join(f"<th>{escape(c.replace('_', ' '))}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(row.get(c))}</td>" for c in columns) + "</tr>"
        for row in rows[:MAX_TABLE_ROWS]
    )
    more = len(rows) - MAX_TABLE_ROWS
    note = f"<p>and {more:,} more rows (on the Insights page).</p>" if more > 0 else ""
    return f"<h3>{escape(title)}</h3><table><tr>{head}</tr>{body}</table>{note}"


def _temporal_charts(rows: Sequence[Mapping[str, Any]]) -> str:
    return "".join(
        svg.stacked_bar(
            f"Rank {row['rank']}: GPU time",
            [
                ("idle", row["idle_ns"] / NS_PER_MS),
                ("compute", row["compute_ns"] / NS_PER_MS),
                ("non-compute", row["non_compute_ns"] / NS_PER_MS),
            ],
            " ms",
        )
        for row in rows[:MAX_TABLE_ROWS]
    )


def _kernel_type_chart(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return ""
    labels = [f"rank {r['rank']} {r['kernel_type']}" for r in rows[:MAX_TABLE_ROWS]]
    values = [r["time_ns"] / NS_PER_MS for r in rows[:MAX_TABLE_ROWS]]
    return svg.bar_chart("GPU time by kernel type", labels, values, unit=" ms")


def window_caption(window: Mapping[str, Any] | None) -> str:
    """What the analyses cover, from the window they were computed in (``analyses_json``'s
    ``window``, as every page names it): every table and chart, the operator table included."""
    if not window or not window.get("label"):
        return "Over the job's window at the time these analyses were computed."
    return f"Every table and chart below covers the job's window: {window['label']}."


def render_analyses(analyses: Mapping[str, Any]) -> str:
    """The "Trace analyses" section; "" when the job has none (no parsed trace)."""
    if not analyses:
        return ""
    parts = [
        "<h1>Trace analyses</h1>",
        f"<p>{escape(window_caption(analyses.get('window')))}</p>",
        "<h2>Temporal breakdown</h2>",
        _temporal_charts(analyses.get("temporal", [])),
        _table(
            "Per rank",
            analyses.get("temporal", []),
            [
                "rank",
                "idle_ns",
                "compute_ns",
                "non_compute_ns",
                "span_ns",
                "idle_pct",
                "compute_pct",
                "non_compute_pct",
            ],
        ),
        "<h2>Kernels</h2>",
        _kernel_type_chart(analyses.get("kernel_types", [])),
        _table(
            "Kernel types",
            analyses.get("kernel_types", []),
            ["rank", "kernel_type", "time_ns", "pct"],
        ),
        _table(
            "Top kernels per rank and type",
            analyses.get("kernels", []),
            [
                "rank",
                "type",
                "name",
                "count",
                "sum_ns",
                "mean_ns",
                "min_ns",
                "max_ns",
                "share_of_type_pct",
            ],
        ),
        "<h2>Idle time</h2>",
        _table(
            "Idle time by cause",
            analyses.get("idle", []),
            ["rank", "stream", "category", "idle_ns", "idle_ratio"],
        ),
        "<h2>Kernel launches</h2>",
        _table(
            "Launch findings (launches as HTA counts them; all launches: every host call "
            "that enqueued GPU work)",
            analyses.get("launch_findings", []),
            [
                "rank",
                "launches",
                "short_kernels",
                "runtime_outliers",
                "delay_outliers",
                "all_launches",
            ],
        ),
        _table(
            "Launch statistics",
            analyses.get("launch_stats", []),
            ["rank", "measure", "count", "mean", "min", "p50", "max"],
        ),
        "<h2>Communication and memory</h2>",
        _table(
            "Communication–computation overlap",
            analyses.get("overlap", []),
            ["rank", "comm_ns", "overlap_ns", "overlap_pct"],
        ),
        _table(
            "Memory copy bandwidth (GB/s)",
            analyses.get("memory_bandwidth_summary", []),
            ["rank", "kind", "count", "mean", "p50", "max"],
        ),
        _table(
            "Queue length per stream",
            analyses.get("queue_length_summary", []),
            ["rank", "stream", "mean", "p50", "max", "full_queue_ns"],
        ),
        "<h2>Operators</h2>",
        _table(
            "Operators by self CPU time",
            analyses.get("operators", []),
            ["name", "rank", "count", "self_ns", "self_pct", "total_ns", "total_pct"],
        ),
    ]
    return "".join(parts)
