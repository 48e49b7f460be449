/** Points taken at a steady pace leave holes where nothing was measured (the time between two
 * captures, a paused process): a line drawn across one shows values nobody measured. */

/** An undrawn point: ECharts breaks a line at it. */
export type GapPoint = [number, "-"];

/** Gaps of more than this many typical spacings break the line. */
const GAP_SPACINGS = 3;

/**
 * The points with an undrawn point between two that lie further apart than the typical
 * (median) spacing allows, so a line over sampled captures breaks between them.
 */
export function breakAtGaps(points: [number, number][]): ([number, number] | GapPoint)[] {
  const spacings = points
    .slice(1)
    .map(([t], i) => t - points[i]![0])
    .sort((a, b) => a - b);
  const typical = spacings[Math.floor(spacings.length / 2)] ?? 0;
  if (typical <= 0) return points;
  return points.flatMap((point, i): ([number, number] | GapPoint)[] => {
    const previous = points[i - 1];
    if (!previous || point[0] - previous[0] <= GAP_SPACINGS * typical) return [point];
    return [[(previous[0] + point[0]) / 2, "-"], point];
  });
}
