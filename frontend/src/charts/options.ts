/** Pure builders of ECharts options: data in, option out, nothing drawn. */
import type { ChartOption } from "./echarts";
import { breakAtGaps } from "./gaps";

/** One tooltip: a heading (e.g. a kernel's full name) and lines of exact values. */
export type Tip = { title: string; lines: string[] };

const HTML_ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Tooltips are HTML and names come from traces (C++ templates are full of "<" and ">"). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char]!);
}

export function tipHtml(tip: Tip): string {
  const lines = tip.lines.map((line) => `<div>${escapeHtml(line)}</div>`).join("");
  return `<div class="chart-tip"><div class="chart-tip-title">${escapeHtml(tip.title)}</div>${lines}</div>`;
}

const TOOLTIP_BASE = {
  confine: false,
  // Long kernel names would be clipped inside a small chart's card; the page has room.
  appendTo: "body",
  extraCssText: "max-width: 460px; white-space: normal; overflow-wrap: anywhere;",
} as const;

/** The data index ECharts passes to an item tooltip's formatter. */
function dataIndexOf(params: unknown): number {
  const first = Array.isArray(params) ? params[0] : params;
  return (first as { dataIndex: number }).dataIndex;
}

export type PieSlice = { name: string; value: number; color: string; tip: Tip };

export function pieOption(slices: readonly PieSlice[]): ChartOption {
  return {
    animationDuration: 300,
    tooltip: {
      ...TOOLTIP_BASE,
      trigger: "item",
      formatter: (params: unknown) => tipHtml(slices[dataIndexOf(params)]!.tip),
    },
    series: [
      {
        type: "pie",
        radius: ["0%", "82%"],
        center: ["50%", "50%"],
        label: { show: false },
        labelLine: { show: false },
        emphasis: { scale: true, scaleSize: 6 },
        data: slices.map((slice) => ({
          name: slice.name,
          value: slice.value,
          itemStyle: { color: slice.color, borderColor: "#fff", borderWidth: 1 },
        })),
      },
    ],
  };
}

export type LineSeries = { name: string; color: string; points: [number, number][] };

type LineOptions = {
  xName: string;
  yMax?: number;
  formatX: (x: number) => string;
  formatY: (y: number) => string;
  // Points sampled at a steady pace: the lines break where none was taken (``gaps``).
  sampled?: boolean;
};

/** One line per series on a shared value axis, zoomable along x. */
export function lineOption(series: readonly LineSeries[], options: LineOptions): ChartOption {
  const { xName, yMax, formatX, formatY, sampled } = options;
  return {
    animation: false,
    grid: { left: 52, right: 20, top: series.length > 1 ? 36 : 12, bottom: 64 },
    legend: series.length > 1 ? { type: "scroll", top: 0 } : undefined,
    tooltip: {
      ...TOOLTIP_BASE,
      trigger: "axis",
      formatter: (params: unknown) => {
        const items = params as { seriesName: string; value: [number, number | "-"] }[];
        if (items.length === 0) return "";
        return tipHtml({
          title: `${xName}: ${formatX(items[0]!.value[0])}`,
          lines: items.map((item) => `${item.seriesName}: ${measured(item.value[1], formatY)}`),
        });
      },
    },
    xAxis: {
      type: "value",
      name: xName,
      nameLocation: "middle",
      nameGap: 26,
      scale: true,
      axisLabel: { formatter: (value: number) => formatX(value) },
    },
    yAxis: {
      type: "value",
      min: 0,
      max: yMax,
      axisLabel: { formatter: (value: number) => formatY(value) },
    },
    dataZoom: [
      { type: "inside", zoomOnMouseWheel: "shift", moveOnMouseWheel: false },
      { type: "slider", height: 16, bottom: 4 },
    ],
    series: series.map((line) => ({
      type: "line",
      name: line.name,
      data: sampled ? breakAtGaps(line.points) : line.points,
      showSymbol: false,
      lineStyle: { width: 1.5 },
      itemStyle: { color: line.color },
    })),
  };
}

/** A value for a tooltip; a gap's (``gaps.GapPoint``) says nothing was measured there. */
export function measured(value: number | "-", format: (value: number) => string): string {
  return value === "-" ? "no data" : format(value);
}

export type Bar = { label: string; value: number; tip: Tip };

/** Adjacent bars over labelled bins, as a histogram reads. */
export function histogramOption(
  bars: readonly Bar[],
  options: { xName: string; yName: string },
): ChartOption {
  return {
    animationDuration: 300,
    grid: { left: 48, right: 16, top: 24, bottom: 48 },
    tooltip: {
      ...TOOLTIP_BASE,
      trigger: "item",
      formatter: (params: unknown) => tipHtml(bars[dataIndexOf(params)]!.tip),
    },
    xAxis: {
      type: "category",
      name: options.xName,
      nameLocation: "middle",
      nameGap: 30,
      data: bars.map((bar) => bar.label),
      axisTick: { alignWithLabel: false },
    },
    yAxis: { type: "value", name: options.yName, minInterval: 1 },
    series: [
      {
        type: "bar",
        barCategoryGap: "4%",
        data: bars.map((bar) => bar.value),
        itemStyle: { color: "#4e79a7" },
        emphasis: { itemStyle: { color: "#2f5d8c" } },
      },
    ],
  };
}
