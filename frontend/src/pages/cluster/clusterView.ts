/** Pure helpers of the cluster page: chart options, links, the waits' order. */
import type { ChartOption } from "../../charts/echarts";
import { escapeHtml } from "../../charts/options";
import type { CollectiveRank, RankRow } from "../../api/cluster";
import { colourFor } from "../../lib/colour";
import { formatDuration } from "../../lib/format";
import { jobPath } from "../../lib/jobPath";

export const PARTS = [
  { key: "gap_ns", label: "Iteration gap", color: colourFor("Iteration gap") },
  { key: "compute_ns", label: "Forward + backward", color: colourFor("Forward + backward") },
  { key: "tail_ns", label: "Iteration tail", color: colourFor("Iteration tail") },
] as const;

/** Stacked bars across ranks: gap, compute and tail add up to the step time. */
export function stepBarOption(rows: readonly RankRow[]): ChartOption {
  return {
    animationDuration: 300,
    grid: { left: 70, right: 16, top: 36, bottom: 40 },
    legend: { top: 0 },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      formatter: (params: unknown) => {
        const index = (params as { dataIndex: number }[])[0]!.dataIndex;
        const row = rows[index]!;
        const lines = PARTS.map(
          (part) => `<div>${part.label}: ${formatDuration(row[part.key])}</div>`,
        );
        return (
          `<div class="chart-tip"><div class="chart-tip-title">Rank ${row.rank} (${escapeHtml(row.node)})` +
          `</div>${lines.join("")}<div>Step: ${formatDuration(row.dur_ns)}</div></div>`
        );
      },
    },
    xAxis: {
      type: "category",
      name: "rank",
      nameLocation: "middle",
      nameGap: 26,
      data: rows.map((row) => String(row.rank)),
    },
    yAxis: { type: "value", axisLabel: { formatter: (value: number) => formatDuration(value) } },
    series: PARTS.map((part) => ({
      type: "bar" as const,
      name: part.label,
      stack: "step",
      itemStyle: { color: part.color },
      data: rows.map((row) => row[part.key]),
    })),
  };
}

/** Rank × collective heat map of communication time. */
export function collectiveHeatmapOption(cells: readonly CollectiveRank[]): ChartOption {
  const ranks = [...new Set(cells.map((cell) => cell.rank))].sort((a, b) => a - b);
  const names = [...new Set(cells.map((cell) => cell.collective))].sort();
  const max = Math.max(1, ...cells.map((cell) => cell.total_ns));
  return {
    animationDuration: 300,
    grid: { left: 110, right: 16, top: 10, bottom: 70 },
    tooltip: {
      formatter: (params: unknown) => {
        const [x, y, value] = (params as { value: [number, number, number] }).value;
        return (
          `<div class="chart-tip"><div class="chart-tip-title">Rank ${ranks[x]}: ` +
          `${escapeHtml(names[y]!)}</div><div>${formatDuration(value)}</div></div>`
        );
      },
    },
    xAxis: {
      type: "category",
      name: "rank",
      nameLocation: "middle",
      nameGap: 26,
      data: ranks.map(String),
    },
    yAxis: { type: "category", data: names },
    visualMap: {
      min: 0,
      max,
      calculable: false,
      orient: "horizontal",
      left: "center",
      bottom: 0,
      itemHeight: 120,
      inRange: { color: ["#eef3fb", "#2f5d9e"] },
      formatter: (value: unknown) => formatDuration(Number(value)),
    },
    series: [
      {
        type: "heatmap",
        data: cells.map((cell) => [
          ranks.indexOf(cell.rank),
          names.indexOf(cell.collective),
          cell.total_ns,
        ]),
      },
    ],
  };
}

/** The timeline of one rank over the rows' step window. */
export function timelineLink(jobId: number, row: RankRow): string {
  const params = new URLSearchParams({
    ranks: String(row.rank),
    t: `${row.start_ns}_${row.end_ns}`,
  });
  return jobPath(jobId, "timeline", params.toString());
}

export function formatBandwidth(gbps: number | null | undefined): string {
  return gbps === null || gbps === undefined ? "—" : `${gbps.toFixed(2)} GB/s`;
}

/** Longest total wait first; rows whose wait is not derivable last, by rank. */
export function byWait(rows: readonly CollectiveRank[]): CollectiveRank[] {
  return [...rows].sort(
    (a, b) =>
      (b.wait_ns ?? -1) - (a.wait_ns ?? -1) ||
      a.rank - b.rank ||
      a.collective.localeCompare(b.collective),
  );
}
