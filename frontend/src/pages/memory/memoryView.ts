import type { ChartOption } from "../../charts/echarts";
import { breakAtGaps } from "../../charts/gaps";
import { measured, tipHtml } from "../../charts/options";
import { colourFor } from "../../lib/colour";
import { formatBytes } from "../../lib/format";
import type { MemoryDevice, NvmlSeries } from "../../api/memory";

const ALLOCATED = colourFor("Allocated");
const RESERVED = colourFor("Reserved");
const NVML = colourFor("NVML used");

/** Seconds since `originNs`, for axes (times are unix ns, past what a double keeps exactly,
 * so differences are taken before converting). */
export function secondsSince(originNs: number, timeNs: number): number {
  return (timeNs - originNs) / 1e9;
}

function formatSeconds(seconds: number): string {
  return `${Number(seconds.toFixed(4))} s`;
}

export const TIME_AXIS = "Time since the trace's start";

/** Allocated and reserved (where recorded) over time as steps, the peak marked; NVML samples
 * beside them. Times are seconds since `originNs`, the trace's start. */
export function memoryChartOption(
  device: MemoryDevice | null,
  originNs: number,
  nvml: NvmlSeries | undefined,
): ChartOption {
  const at = (t: number) => secondsSince(originNs, t);
  const series: object[] =
    device === null
      ? []
      : [
          {
            type: "line",
            name: "Allocated",
            step: "end",
            showSymbol: false,
            itemStyle: { color: ALLOCATED },
            lineStyle: { width: 1.5 },
            areaStyle: { opacity: 0.12 },
            data: device.curve.map(([t, allocated]) => [at(t!), allocated]),
            markPoint: {
              symbol: "pin",
              symbolSize: 44,
              itemStyle: { color: "#dc2626" },
              label: { formatter: "peak", fontSize: 10 },
              data: [
                {
                  name: "Peak",
                  coord: [at(device.time_ns), device.allocated],
                  value: device.allocated,
                },
              ],
            },
          },
        ];
  if (device !== null && device.reserved !== null) {
    series.push({
      type: "line",
      name: "Reserved",
      step: "end",
      showSymbol: false,
      itemStyle: { color: RESERVED },
      lineStyle: { width: 1.2, type: "dashed" },
      data: device.curve.map(([t, , reserved]) => [at(t!), reserved]),
    });
  }
  if (nvml) {
    series.push({
      type: "line",
      name: `NVML used (${nvml.device})`,
      showSymbol: true,
      symbolSize: 4,
      itemStyle: { color: NVML },
      data: breakAtGaps(nvml.points.map(([t, v]) => [at(t!), v!])),
    });
  }
  return {
    animation: false,
    grid: { left: 72, right: 24, top: 36, bottom: 64 },
    legend: { top: 0 },
    tooltip: {
      trigger: "axis",
      confine: true,
      formatter: (params: unknown) => {
        const items = params as { seriesName: string; value: [number, number | "-"] }[];
        if (items.length === 0) return "";
        return tipHtml({
          title: `Time: ${formatSeconds(items[0]!.value[0])}`,
          lines: items.map((item) => `${item.seriesName}: ${measured(item.value[1], formatBytes)}`),
        });
      },
    },
    xAxis: {
      type: "value",
      name: TIME_AXIS,
      nameLocation: "middle",
      nameGap: 26,
      scale: true,
      axisLabel: { formatter: formatSeconds },
    },
    // From zero, or below it where a running sum of sizes frees memory held before profiling.
    yAxis: {
      type: "value",
      min: (extent: { min: number }) => Math.min(0, extent.min),
      axisLabel: { formatter: (v: number) => (v < 0 ? formatSignedBytes(v) : formatBytes(v)) },
    },
    dataZoom: [
      { type: "inside", zoomOnMouseWheel: "shift", moveOnMouseWheel: false },
      { type: "slider", height: 16, bottom: 4 },
    ],
    series,
  } as ChartOption;
}

/** Bytes allocated (+) or freed (−). */
export function formatSignedBytes(bytes: number): string {
  return bytes < 0 ? `−${formatBytes(-bytes)}` : `+${formatBytes(bytes)}`;
}
