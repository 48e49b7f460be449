/**
 * Coordinate math of the timeline. Two spaces: ``timeNs`` (nanoseconds from the job's origin)
 * and ``px`` (CSS pixels from the left edge of the plot). A ``View`` is the visible time range.
 */

export type View = { startNs: number; endNs: number };

/** Where the job's data lies; views stay within a margin of it. */
export type Bounds = { startNs: number; endNs: number };

export const MIN_SPAN_NS = 100;

export function spanNs(view: View): number {
  return view.endNs - view.startNs;
}

export function timeToPx(view: View, widthPx: number, timeNs: number): number {
  return ((timeNs - view.startNs) / spanNs(view)) * widthPx;
}

export function pxToTime(view: View, widthPx: number, px: number): number {
  return view.startNs + (px / widthPx) * spanNs(view);
}

/** Keeps the span between MIN_SPAN_NS and the bounds' span (plus a margin), inside the bounds. */
export function clampView(view: View, bounds: Bounds): View {
  const total = Math.max(bounds.endNs - bounds.startNs, MIN_SPAN_NS);
  const margin = total * 0.05;
  const span = Math.min(Math.max(spanNs(view), MIN_SPAN_NS), total + 2 * margin);
  let startNs = view.startNs;
  startNs = Math.max(startNs, bounds.startNs - margin);
  startNs = Math.min(startNs, bounds.endNs + margin - span);
  return { startNs, endNs: startNs + span };
}

/** Zoom by ``factor`` (< 1 zooms in) keeping ``anchorNs`` where it is on screen. */
export function zoomAt(view: View, factor: number, anchorNs: number, bounds: Bounds): View {
  const startNs = anchorNs - (anchorNs - view.startNs) * factor;
  const endNs = anchorNs + (view.endNs - anchorNs) * factor;
  if (endNs - startNs < MIN_SPAN_NS) {
    const ratio = (anchorNs - view.startNs) / spanNs(view);
    return clampView(
      { startNs: anchorNs - ratio * MIN_SPAN_NS, endNs: anchorNs + (1 - ratio) * MIN_SPAN_NS },
      bounds,
    );
  }
  return clampView({ startNs, endNs }, bounds);
}

export function panBy(view: View, deltaNs: number, bounds: Bounds): View {
  return clampView({ startNs: view.startNs + deltaNs, endNs: view.endNs + deltaNs }, bounds);
}

/** A view showing [startNs, startNs + durNs) with some room on both sides. */
export function focusOn(startNs: number, durNs: number, bounds: Bounds): View {
  const span = Math.max(durNs * 1.5, MIN_SPAN_NS * 10);
  const middle = startNs + durNs / 2;
  return clampView({ startNs: middle - span / 2, endNs: middle + span / 2 }, bounds);
}

/** The same span, centred on ``timeNs``. */
export function centreOn(view: View, timeNs: number, bounds: Bounds): View {
  const half = spanNs(view) / 2;
  return clampView({ startNs: timeNs - half, endNs: timeNs + half }, bounds);
}

const UNITS = [
  { label: "s", ns: 1e9 },
  { label: "ms", ns: 1e6 },
  { label: "µs", ns: 1e3 },
  { label: "ns", ns: 1 },
];

export type Tick = { timeNs: number; px: number; label: string };

/**
 * Ruler ticks at a "nice" step (1, 2 or 5 × 10^n ns) at least ``minGapPx`` apart. Labels use
 * the step's unit, or a larger one when that would need more than five digits before the point.
 */
export function rulerTicks(
  view: View,
  widthPx: number,
  minGapPx = 90,
): { stepNs: number; ticks: Tick[] } {
  const span = spanNs(view);
  const rough = (span / widthPx) * minGapPx;
  const power = 10 ** Math.floor(Math.log10(Math.max(rough, 1)));
  const stepNs = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? 10 * power;
  let u = UNITS.findIndex((unit) => stepNs >= unit.ns);
  if (u < 0) u = UNITS.length - 1;
  const far = Math.max(Math.abs(view.startNs), Math.abs(view.endNs));
  while (u > 0 && far / UNITS[u]!.ns >= 1e5) u -= 1;
  const unit = UNITS[u]!;
  const decimals = Math.max(0, Math.ceil(-Math.log10(stepNs / unit.ns) - 1e-9));
  const ticks: Tick[] = [];
  const first = Math.ceil(view.startNs / stepNs) * stepNs;
  for (let t = first; t <= view.endNs && ticks.length < 1000; t += stepNs) {
    ticks.push({
      timeNs: t,
      px: timeToPx(view, widthPx, t),
      label: `${(t / unit.ns).toFixed(decimals)} ${unit.label}`,
    });
  }
  return { stepNs, ticks };
}

/**
 * The bucket width the server cuts a view into: the largest power of two not wider than a
 * pixel (the same rule as ``Window.for_view``).
 */
export function levelFor(view: View, widthPx: number): number {
  const perPx = spanNs(view) / widthPx;
  return perPx >= 1 ? Math.floor(Math.log2(perPx)) : 0;
}

export type ViewportRequest = { startNs: number; endNs: number; widthPx: number; k: number };

/**
 * What to fetch for a view: the view plus a quarter on each side, at the view's level, snapped
 * to whole blocks of 256 buckets so that small pans ask for the same window again. The width
 * is chosen so the server picks exactly level ``k``.
 */
export function planRequest(view: View, widthPx: number): ViewportRequest {
  const k = levelFor(view, widthPx);
  const block = 2 ** k * 256;
  const margin = spanNs(view) / 4;
  const startNs = Math.floor((view.startNs - margin) / block) * block;
  const endNs = Math.ceil((view.endNs + margin) / block) * block;
  return { startNs, endNs, widthPx: Math.round((endNs - startNs) / 2 ** k), k };
}

/** Whether data fetched for ``request`` can still draw ``view`` at its level. */
export function covers(request: ViewportRequest, view: View, widthPx: number): boolean {
  return (
    request.k === levelFor(view, widthPx) &&
    request.startNs <= view.startNs &&
    request.endNs >= view.endNs
  );
}
