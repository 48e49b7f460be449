/**
 * Dashboard data → pie slices and line series, with the exact values each shows on hover.
 * Pure: the panels only draw what these return.
 */
import type {
  ActiveShare,
  KernelTop,
  KindRow,
  PrecisionRow,
  TakenOver,
  Utilization,
} from "../../api/dashboard";
import { ACTIVE_COLOUR, OTHER_COLOUR, colourFor } from "../../lib/colour";
import type { LineSeries } from "../../charts/options";
import type { LegendSlice } from "../../charts/PieChart";
import {
  formatBytes,
  formatCount,
  formatPercent,
  formatSeconds,
  formatSecondsWithUnit,
  plural,
} from "../../lib/format";
import { shortKernelName } from "../../lib/kernelNames";
import { topKWithOther } from "./topk";

/** "Active"/"Idle" data points of a utilisation metric: active means utilisation above 0%. */
export function activeSlices(share: ActiveShare, device: "GPU" | "CPU"): LegendSlice[] {
  const total = share.active_points + share.idle_points;
  const slice = (name: string, points: number, color: string, meaning: string): LegendSlice => ({
    name,
    legendName: name,
    value: points,
    color,
    valueText: plural(points, "point"),
    shareText: formatPercent(points, total),
    tip: {
      title: `${device} ${name.toLowerCase()}`,
      lines: [
        `${plural(points, "data point")} (${meaning})`,
        `${formatPercent(points, total)} of ${formatCount(total)} data points`,
      ],
    },
  });
  return [
    slice("Active", share.active_points, ACTIVE_COLOUR, "utilisation > 0%"),
    slice("Idle", share.idle_points, OTHER_COLOUR, "utilisation = 0%"),
  ].filter((s) => s.value > 0);
}

/**
 * What a slice's time is a share of (the response's ``over``): per GPU, the captured steps' time
 * on a sampled job, else the profile's span, times the GPUs that ran kernels (kernel time summed
 * over 8 GPUs is a share of 8 spans, not of one). ``label`` names it in a tooltip, ``caption``
 * under a chart.
 */
export type GpuTime = { ns: number; label: string; caption: string };

export function gpuTime(over: TakenOver, gpus: number): GpuTime {
  const time = formatSeconds(over.ns);
  const captured = over.what === "captured steps";
  const whole = captured
    ? `the ${formatCount(over.steps)} captured steps' ${time}`
    : `the profile's ${time} span`;
  if (gpus <= 1)
    return { ns: over.ns, label: captured ? "the captured steps" : "the profile", caption: whole };
  const label = `the ${formatCount(gpus)} GPUs' ${captured ? "captured steps" : "time"}`;
  const each = captured ? `${time} of captured steps` : `the ${time} span`;
  return { ns: over.ns * gpus, label, caption: `${label} (${each} × ${formatCount(gpus)})` };
}

type KernelSliceOptions = { k: number; withOther: boolean; gpuTime: GpuTime };

/** Kernels by total run time, each with seconds and its share of the GPUs' time. */
export function kernelTimeSlices(kernels: KernelTop, options: KernelSliceOptions): LegendSlice[] {
  const { k, withOther, gpuTime } = options;
  const { slices, other } = topKWithOther(kernels.top, (row) => row.total_ns, kernels.total_ns, k);
  const result: LegendSlice[] = slices.map(({ row }) => ({
    name: row.name,
    legendName: shortKernelName(row.name),
    value: row.total_ns,
    color: colourFor(row.name),
    valueText: formatSeconds(row.total_ns),
    shareText: formatPercent(row.total_ns, gpuTime.ns),
    tip: {
      title: row.name,
      lines: [
        `Total time: ${formatSecondsWithUnit(row.total_ns)}`,
        `${formatPercent(row.total_ns, gpuTime.ns)} of ${gpuTime.label}`,
        `${formatPercent(row.total_ns, kernels.total_ns)} of all kernel time`,
        `Launches: ${formatCount(row.count)}`,
      ],
    },
  }));
  if (withOther && other > 0) {
    const otherCount = kernels.total_count - slices.reduce((sum, { row }) => sum + row.count, 0);
    result.push({
      name: "Other",
      legendName: "Other",
      value: other,
      color: OTHER_COLOUR,
      valueText: formatSeconds(other),
      shareText: formatPercent(other, gpuTime.ns),
      tip: {
        title: `Other: all kernels beyond the top ${k}`,
        lines: [
          `Total time: ${formatSecondsWithUnit(other)}`,
          `${formatPercent(other, gpuTime.ns)} of ${gpuTime.label}`,
          `${formatPercent(other, kernels.total_ns)} of all kernel time`,
          `Launches: ${formatCount(otherCount)}`,
        ],
      },
    });
  }
  return result;
}

/** Kernels by launch count, each with its share of all launches. */
export function kernelCountSlices(
  kernels: KernelTop,
  options: Omit<KernelSliceOptions, "gpuTime">,
): LegendSlice[] {
  const { k, withOther } = options;
  const { slices, other } = topKWithOther(kernels.top, (row) => row.count, kernels.total_count, k);
  const result: LegendSlice[] = slices.map(({ row }) => ({
    name: row.name,
    legendName: shortKernelName(row.name),
    value: row.count,
    color: colourFor(row.name),
    valueText: formatCount(row.count),
    shareText: formatPercent(row.count, kernels.total_count),
    tip: {
      title: row.name,
      lines: [
        `Launches: ${formatCount(row.count)}`,
        `${formatPercent(row.count, kernels.total_count)} of all ${formatCount(kernels.total_count)} launches`,
        `Total time: ${formatSecondsWithUnit(row.total_ns)}`,
      ],
    },
  }));
  if (withOther && other > 0) {
    result.push({
      name: "Other",
      legendName: "Other",
      value: other,
      color: OTHER_COLOUR,
      valueText: formatCount(other),
      shareText: formatPercent(other, kernels.total_count),
      tip: {
        title: `Other: all kernels beyond the top ${k}`,
        lines: [
          `Launches: ${formatCount(other)}`,
          `${formatPercent(other, kernels.total_count)} of all ${formatCount(kernels.total_count)} launches`,
        ],
      },
    });
  }
  return result;
}

type TimedRow = { label: string; total_ns: number; count: number; extra?: string[] };

/**
 * Slices of GPU time by some category: share of the pie's whole in the legend; seconds, the
 * share of the GPUs' time and the count on hover.
 */
function timedSlices(
  rows: readonly TimedRow[],
  gpuTime: GpuTime,
  whole: string,
  counted: string,
): LegendSlice[] {
  const sorted = rows.filter((row) => row.total_ns > 0).sort((a, b) => b.total_ns - a.total_ns);
  const totalNs = sorted.reduce((sum, row) => sum + row.total_ns, 0);
  return sorted.map((row) => ({
    name: row.label,
    legendName: row.label,
    value: row.total_ns,
    color: colourFor(row.label),
    valueText: formatSeconds(row.total_ns),
    shareText: formatPercent(row.total_ns, totalNs),
    tip: {
      title: row.label,
      lines: [
        `Total time: ${formatSecondsWithUnit(row.total_ns)}`,
        `${formatPercent(row.total_ns, totalNs)} of ${whole}`,
        `${formatPercent(row.total_ns, gpuTime.ns)} of ${gpuTime.label}`,
        `${counted}: ${formatCount(row.count)}`,
        ...(row.extra ?? []),
      ],
    },
  }));
}

export function precisionSlices(rows: readonly PrecisionRow[], gpuTime: GpuTime): LegendSlice[] {
  const labelled = rows.map((row) => ({ ...row, label: row.precision }));
  return timedSlices(labelled, gpuTime, "kernel time", "Kernel runs");
}

const ACTIVITY_LABELS: Record<string, string> = {
  kernel: "Kernels",
  memcpy: "Memory copies (memcpy)",
  memset: "Memory sets (memset)",
  sync: "Synchronisation",
};

export function activitySlices(rows: readonly KindRow[], gpuTime: GpuTime): LegendSlice[] {
  const labelled = rows.map((row) => ({ ...row, label: ACTIVITY_LABELS[row.kind] ?? row.kind }));
  return timedSlices(labelled, gpuTime, "GPU activity time", "Operations");
}

/** Achieved bandwidth in GB/s: bytes per nanosecond is exactly GB per second. */
function bandwidth(bytes: number, totalNs: number): string {
  return `${(bytes / totalNs).toFixed(2)} GB/s`;
}

export function memoryOpSlices(rows: readonly KindRow[], gpuTime: GpuTime): LegendSlice[] {
  const labelled = rows.map((row) => ({
    ...row,
    label: row.kind,
    extra: row.bytes
      ? [`Bytes: ${formatBytes(row.bytes)}`, `Bandwidth: ${bandwidth(row.bytes, row.total_ns)}`]
      : [],
  }));
  return timedSlices(labelled, gpuTime, "memory operation time", "Operations");
}

/** One line per node, in seconds since the earliest sample of any node: one shared time axis. */
export function utilizationLines(utilization: Utilization): LineSeries[] {
  const firsts = utilization.series.flatMap((s) => s.points[0]?.slice(0, 1) ?? []);
  const startNs = firsts.length ? Math.min(...firsts) : 0;
  return utilization.series.map((s) => ({
    name: s.node,
    color: colourFor(s.node),
    // Each point is a [time_ns, percent] pair.
    points: s.points.map((point) => [(point[0]! - startNs) / 1e9, point[1]!]),
  }));
}
