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


# Each section of the report's trace analyses: (heading, its tables as (title, the analyses'
# key, columns)); the charts above two of them are drawn by ``_SECTION_CHARTS``.
_SECTIONS: tuple[tuple[str, tuple[tuple[str, str, tuple[str, ...]], ...]], ...] = (
    (
        "Temporal breakdown",
        (
            (
                "Per rank",
                "temporal",
                ("rank", "idle_ns", "compute_ns", "non_compute_ns", "span_ns")
                + ("idle_pct", "compute_pct", "non_compute_pct"),
            ),
        ),
    ),
    (
        "Kernels",
        (
            ("Kernel types", "kernel_types", ("rank", "kernel_type", "time_ns", "pct")),
            (
                "Top kernels per rank and type",
                "kernels",
                ("rank", "type", "name", "count", "sum_ns", "mean_ns", "min_ns", "max_ns")
                + ("share_of_type_pct",),
            ),
        ),
    ),
    (
        "Idle time",
        (
            (
                "Idle time by cause",
                "idle",
                ("rank", "stream", "category", "idle_ns", "idle_ratio"),
            ),
        ),
    ),
    (
        "Kernel launches",
        (
            (
                "Launch findings (launches as HTA counts them; all launches: every host call "
                "that enqueued GPU work)",
                "launch_findings",
                ("rank", "launches", "short_kernels", "runtime_outliers", "delay_outliers")
                + ("all_launches",),
            ),
            (
                "Launch statistics",
                "launch_stats",
                ("rank", "measure", "count", "mean", "min", "p50", "max"),
            ),
        ),
    ),
    (
        "Communication and memory",
        (
            (
                "Communication–computation overlap",
                "overlap",
                ("rank", "comm_ns", "overlap_ns", "overlap_pct"),
            ),
            (
                "Memory copy bandwidth (GB/s)",
                "memory_bandwidth_summary",
                ("rank", "kind", "count", "mean", "p50", "max"),
            ),
            (
                "Queue length per stream",
                "queue_length_summary",
                ("rank", "stream", "mean", "p50", "max", "full_queue_ns"),
            ),
        ),
    ),
    (
        "Operators",
        (
            (
                "Operators by self CPU time",
                "operators",
                ("name", "rank", "count", "self_ns", "self_pct", "total_ns", "total_pct"),
            ),
        ),
    ),
)


def render_analyses(analyses: Mapping[str, Any]) -> str:
    """The "Trace analyses" section; "" when the job has none (no parsed trace)."""
    if not analyses:
        return ""
    charts = {
        "Temporal breakdown": _temporal_charts(analyses.get("temporal", [])),
        "Kernels": _kernel_type_chart(analyses.get("kernel_types", [])),
    }
    parts = [
        "<h1>Trace analyses</h1>",
        f"<p>{escape(window_caption(analyses.get('window')))}</p>",
    ]
    for heading, tables in _SECTIONS:
        parts += [f"<h2>{escape(heading)}</h2>", charts.get(heading, "")]
        parts += [_table(title, analyses.get(key, []), list(cols)) for title, key, cols in tables]
    return "".join(parts)
