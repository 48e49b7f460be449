/**
 * ECharts with only the charts and components the dashboard draws, so the bundle carries no
 * more of the library than that. SVG rendering keeps lines and text crisp at any zoom level.
 */
import {
  BarChart,
  type BarSeriesOption,
  HeatmapChart,
  type HeatmapSeriesOption,
  LineChart,
  type LineSeriesOption,
  PieChart,
  type PieSeriesOption,
} from "echarts/charts";
import {
  DataZoomInsideComponent,
  type DataZoomComponentOption,
  DataZoomSliderComponent,
  GridComponent,
  type GridComponentOption,
  LegendScrollComponent,
  type LegendComponentOption,
  MarkPointComponent,
  type MarkPointComponentOption,
  TooltipComponent,
  type TooltipComponentOption,
  VisualMapContinuousComponent,
  type VisualMapComponentOption,
} from "echarts/components";
import { type ComposeOption, use as registerEcharts } from "echarts/core";
import { SVGRenderer } from "echarts/renderers";

registerEcharts([
  BarChart,
  HeatmapChart,
  LineChart,
  PieChart,
  DataZoomInsideComponent,
  DataZoomSliderComponent,
  GridComponent,
  LegendScrollComponent,
  MarkPointComponent,
  TooltipComponent,
  VisualMapContinuousComponent,
  SVGRenderer,
]);

export { init, type ECharts } from "echarts/core";

export type ChartOption = ComposeOption<
  | BarSeriesOption
  | HeatmapSeriesOption
  | LineSeriesOption
  | PieSeriesOption
  | DataZoomComponentOption
  | GridComponentOption
  | LegendComponentOption
  | MarkPointComponentOption
  | TooltipComponentOption
  | VisualMapComponentOption
>;
