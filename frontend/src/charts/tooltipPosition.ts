/** Where a tooltip goes: beside the pointer, flipped and clamped to stay inside the window. */

type Rect = { left: number; top: number };
type Size = [number, number];

const GAP_PX = 14;
const MARGIN_PX = 8;

/** One axis: after the pointer when it fits, else before it, and never off the window's edge. */
function place(pointer: number, size: number, chartStart: number, window: number): number {
  let start = pointer + GAP_PX;
  if (chartStart + start + size > window - MARGIN_PX) start = pointer - GAP_PX - size;
  return Math.max(start, MARGIN_PX - chartStart);
}

/**
 * The tooltip's top-left corner relative to the chart (as ECharts expects) for a pointer at
 * `point` in the chart; the chart sits at `chart` in a window of `viewport` size. Small pie
 * charts would otherwise flip long kernel names off the page's left edge.
 */
export function tooltipPosition(point: Size, tooltip: Size, chart: Rect, viewport: Size): Size {
  return [
    place(point[0], tooltip[0], chart.left, viewport[0]),
    place(point[1], tooltip[1], chart.top, viewport[1]),
  ];
}
