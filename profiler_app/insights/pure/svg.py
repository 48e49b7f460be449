"""Small static SVG charts for the downloadable report: no script, no external asset.

Each function returns one ``<svg>`` element as text; all text is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

WIDTH = 640
ROW = 22
LABEL_WIDTH = 200
PLOT = WIDTH - LABEL_WIDTH - 60
BLUE, ORANGE, GREY, RED = "#4e79a7", "#f28e2b", "#bab0ac", "#e15759"


def _svg(height: float, body: str, title: str) -> str:
    """The chart with its title written above it."""
    total = height + 20
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{total:.0f}" '
        f'viewBox="0 0 {WIDTH} {total:.0f}" role="img"><title>{escape(title)}</title>'
        f"<style>text{{font:11px sans-serif;fill:#333}}</style>"
        f'<text x="4" y="13" style="font-weight:bold">{escape(title)}</text>'
        f'<g transform="translate(0,20)">{body}</g></svg>'
    )


def _label(x: float, y: float, text: str, anchor: str = "start") -> str:
    short = text if len(text) <= 34 else text[:33] + "…"
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}">{escape(short)}</text>'


def _scale(value: float, top: float) -> float:
    return LABEL_WIDTH + PLOT * (min(max(value, 0.0), top) / top if top > 0 else 0.0)


def _threshold(value: float, top: float, height: float, text: str) -> str:
    x = _scale(value, top)
    return (
        f'<line x1="{x:.1f}" y1="4" x2="{x:.1f}" y2="{height - 16:.1f}" stroke="{RED}" '
        f'stroke-dasharray="4 3"/>{_label(x, height - 4, text, "middle")}'
    )


def bar_chart(
    title: str,
    labels: Sequence[str],
    values: Sequence[float],
    *,
    unit: str = "",
    top: float | None = None,
    threshold: float | None = None,
) -> str:
    """Horizontal bars, one per label."""
    top = top if top is not None else max([*values, threshold or 0.0, 1e-9])
    height = ROW * len(labels) + 24
    body = []
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        y = 4 + i * ROW
        body.append(_label(LABEL_WIDTH - 6, y + 14, label, "end"))
        body.append(
            f'<rect x="{LABEL_WIDTH}" y="{y + 3}" width="{_scale(value, top) - LABEL_WIDTH:.1f}" '
            f'height="{ROW - 6}" fill="{BLUE}"/>'
        )
        body.append(_label(_scale(value, top) + 4, y + 14, f"{value:,.1f}{unit}"))
    if threshold is not None:
        body.append(_threshold(threshold, top, height, f"threshold {threshold:g}{unit}"))
    return _svg(height, "".join(body), title)


def box_chart(
    title: str,
    labels: Sequence[str],
    boxes: Sequence[dict],
    *,
    top: float = 100.0,
    thresholds: Sequence[tuple[float, str]] = (),
    unit: str = "%",
) -> str:
    """Whiskers p5–p95, box p25–p75, tick at p50, one row per label."""
    height = ROW * len(labels) + 24
    body = []
    for i, (label, box) in enumerate(zip(labels, boxes, strict=True)):
        y = 4 + i * ROW
        mid = y + ROW / 2
        body.append(_label(LABEL_WIDTH - 6, y + 14, label, "end"))
        lo, hi = _scale(box["p5"], top), _scale(box["p95"], top)
        q1, q3, med = (_scale(box[k], top) for k in ("p25", "p75", "p50"))
        body.append(f'<line x1="{lo:.1f}" y1="{mid}" x2="{hi:.1f}" y2="{mid}" stroke="#555"/>')
        body.append(
            f'<rect x="{q1:.1f}" y="{y + 4}" width="{max(q3 - q1, 1):.1f}" height="{ROW - 8}" '
            f'fill="{BLUE}" fill-opacity="0.6" stroke="#333"/>'
        )
        body.append(
            f'<line x1="{med:.1f}" y1="{y + 3}" x2="{med:.1f}" y2="{y + ROW - 3}" stroke="#000" stroke-width="2"/>'
        )
    for value, text in thresholds:
        body.append(_threshold(value, top, height, f"{text} {value:g}{unit}"))
    return _svg(height, "".join(body), title)


def line_chart(
    title: str, values: Sequence[float], *, top: float = 100.0, threshold: float | None = None
) -> str:
    """A line over evenly spaced points (e.g. one per scan), y from 0 to ``top``."""
    height, left, plot_h = 160, 40, 120
    n = max(len(values), 2)
    step = (WIDTH - left - 10) / (n - 1)

    def y(v: float) -> float:
        return 10 + plot_h * (1 - min(max(v, 0.0), top) / top)

    points = " ".join(f"{left + i * step:.1f},{y(v):.1f}" for i, v in enumerate(values))
    body = [
        f'<line x1="{left}" y1="{10 + plot_h}" x2="{WIDTH - 10}" y2="{10 + plot_h}" stroke="#999"/>',
        _label(left - 4, 14, f"{top:g}", "end"),
        _label(left - 4, 10 + plot_h, "0", "end"),
        f'<polyline fill="none" stroke="{BLUE}" stroke-width="2" points="{points}"/>',
        _label(WIDTH / 2, height - 6, "scan", "middle"),
    ]
    if threshold is not None:
        body.append(
            f'<line x1="{left}" y1="{y(threshold):.1f}" x2="{WIDTH - 10}" y2="{y(threshold):.1f}" '
            f'stroke="{RED}" stroke-dasharray="4 3"/>'
        )
        body.append(_label(WIDTH - 12, y(threshold) - 3, f"threshold {threshold:g}", "end"))
    return _svg(height, "".join(body), title)


def histogram(title: str, counts: Sequence[int], edges: Sequence[float], unit: str) -> str:
    """Vertical bars over bins given by ``edges`` (len(counts) + 1 values)."""
    height, left, plot_h = 170, 40, 120
    n = max(len(counts), 1)
    width = (WIDTH - left - 10) / n
    top = max([*counts, 1])
    body = [_label(left - 4, 14, str(top), "end"), _label(left - 4, 10 + plot_h, "0", "end")]
    for i, count in enumerate(counts):
        h = plot_h * count / top
        body.append(
            f'<rect x="{left + i * width:.1f}" y="{10 + plot_h - h:.1f}" width="{max(width - 1, 1):.1f}" '
            f'height="{h:.1f}" fill="{BLUE}"/>'
        )
    if len(edges) >= 2:
        body.append(_label(left, 10 + plot_h + 14, f"{edges[0]:,.1f}{unit}"))
        body.append(_label(WIDTH - 10, 10 + plot_h + 14, f"{edges[-1]:,.1f}{unit}", "end"))
    return _svg(height, "".join(body), title)


def heatmap(
    title: str, labels: Sequence[str], rows: Sequence[Sequence[float]], x_label: str
) -> str:
    """One row of cells per label; darker = larger share of the row."""
    height = ROW * len(labels) + 24
    body = []
    for i, (label, row) in enumerate(zip(labels, rows, strict=True)):
        y = 4 + i * ROW
        body.append(_label(LABEL_WIDTH - 6, y + 14, label, "end"))
        total = sum(row) or 1
        width = PLOT / max(len(row), 1)
        for j, value in enumerate(row):
            share = value / total
            if share > 0:
                body.append(
                    f'<rect x="{LABEL_WIDTH + j * width:.1f}" y="{y + 2}" width="{width:.1f}" '
                    f'height="{ROW - 4}" fill="{BLUE}" fill-opacity="{min(1.0, 0.1 + 3 * share):.2f}"/>'
                )
    body.append(_label(LABEL_WIDTH + PLOT / 2, height - 4, x_label, "middle"))
    return _svg(height, "".join(body), title)


def stacked_bar(title: str, parts: Sequence[tuple[str, float]], unit: str) -> str:
    """One bar split into labelled parts (e.g. initialization, training, finalization)."""
    total = sum(v for _, v in parts) or 1.0
    colours = (ORANGE, BLUE, GREY, RED)
    x = 10.0
    body = []
    for i, (label, value) in enumerate(parts):
        w = (WIDTH - 20) * value / total
        body.append(
            f'<rect x="{x:.1f}" y="8" width="{w:.1f}" height="24" fill="{colours[i % 4]}"/>'
        )
        body.append(
            f'<rect x="10" y="{41 + 14 * i}" width="10" height="10" fill="{colours[i % 4]}"/>'
        )
        body.append(_label(26, 50 + 14 * i, f"{label}: {value:,.1f}{unit}"))
        x += w
    return _svg(56 + 14 * len(parts), "".join(body), title)
