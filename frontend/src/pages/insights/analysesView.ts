/** Pure shaping of the analyses for the page's charts and tables. */
import type { LegendSlice } from "../../charts/PieChart";
import type { LineSeries } from "../../charts/options";
import type { DataColumn } from "../../components/DataTable";
import { OTHER_COLOUR, colourFor } from "../../lib/colour";
import { formatDuration } from "../../lib/format";
import { shortKernelName } from "../../lib/kernelNames";

export type Row = Record<string, unknown>;

export function num(row: Row, key: string): number {
  const value = row[key];
  return typeof value === "number" ? value : 0;
}

export const RANK: DataColumn = { key: "rank", label: "Rank" };

/**
 * A kernel-name column that fits: a C++ kernel by its function and template arguments, the full
 * name on hover. Names without a namespace stay whole: "Memcpy HtoD (Pageable -> Device)" says
 * in its parentheses what kind of copy it is.
 */
export function kernelNameColumn(label: string): DataColumn {
  const name = (row: Row) => String(row["name"] ?? "");
  return {
    key: "name",
    label,
    code: true,
    cell: (row) => (name(row).includes("::") ? shortKernelName(name(row)) : name(row)),
    cellTitle: name,
  };
}

/** A rank column first, where the table holds more than one rank. */
export function withRank(rows: Row[], columns: DataColumn[]): DataColumn[] {
  const ranks = new Set(rows.map((row) => row["rank"]));
  return ranks.size > 1 ? [RANK, ...columns] : columns;
}

/** Idle / compute / non-compute time of one rank, as HTA's temporal breakdown. */
export function temporalSlices(row: Row): LegendSlice[] {
  const span = num(row, "span_ns");
  const parts: [string, string][] = [
    ["idle", "Idle"],
    ["compute", "Compute"],
    ["non_compute", "Non-compute"],
  ];
  return parts.map(([key, label]) => {
    const ns = num(row, `${key}_ns`);
    const share = span > 0 ? `${((100 * ns) / span).toFixed(1)}%` : "–";
    return {
      name: label,
      legendName: label,
      value: ns,
      color: key === "idle" ? OTHER_COLOUR : colourFor(label),
      valueText: formatDuration(ns),
      shareText: share,
      tip: { title: `Rank ${num(row, "rank")}: ${label}`, lines: [formatDuration(ns), share] },
    };
  });
}

/** One line per (rank, stream) of the down-sampled queue length. */
export function queueLines(lines: Row[]): LineSeries[] {
  return toLines(lines, (line) => `rank ${num(line, "rank")} stream ${num(line, "stream")}`);
}

/** One line per (rank, copy kind) of the down-sampled memory-copy bandwidth. */
export function bandwidthLines(lines: Row[]): LineSeries[] {
  return toLines(lines, (line) => `rank ${num(line, "rank")} ${String(line["kind"] ?? "")}`);
}

/** Lines on a shared time axis: seconds since the earliest point of any line. */
export function relativeToFirstPoint(series: LineSeries[]): LineSeries[] {
  const origin = Math.min(...series.map((s) => s.points[0]?.[0] ?? Infinity));
  return series.map((s) => ({ ...s, points: s.points.map(([t, v]) => [(t - origin) / 1e9, v]) }));
}

function toLines(lines: Row[], name: (line: Row) => string): LineSeries[] {
  return lines.map((line) => ({
    name: name(line),
    color: colourFor(name(line)),
    points: (line["points"] as [number, number][]).map(([t, v]) => [t, v]),
  }));
}
