/** Starts loading the charting library: a page that draws a chart once its data arrives asks
 * for both at once rather than one after the other. */
export function preloadCharts() {
  return import("./EChart");
}
