/** Histogram binning and summary statistics of durations (integer nanoseconds). */
import type { Bar } from "../../charts/options";
import {
  type DurationUnit,
  formatDuration,
  formatPercent,
  plural,
  unitFor,
} from "../../lib/format";

export type Bin = {
  startNs: number;
  endNs: number;
  count: number;
  /** Indexes of the durations that fall in this bin, in input order. */
  members: number[];
};

const MAX_BINS = 50;

/** Quantile with linear interpolation between closest ranks (numpy's default). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const position = (sorted.length - 1) * q;
  const below = Math.floor(position);
  const above = Math.min(below + 1, sorted.length - 1);
  return sorted[below]! + (sorted[above]! - sorted[below]!) * (position - below);
}

/**
 * Freedman–Diaconis bin count, which resists outliers, falling back to Sturges' rule for small
 * samples and when the quartiles coincide; at most MAX_BINS so each bar stays wide enough to hover.
 */
export function binCount(sorted: readonly number[]): number {
  const n = sorted.length;
  if (n < 2) return 1;
  const range = sorted[n - 1]! - sorted[0]!;
  if (range === 0) return 1;
  const sturges = Math.ceil(Math.log2(n)) + 1;
  const iqr = quantile(sorted, 0.75) - quantile(sorted, 0.25);
  if (n < 30 || iqr === 0) return Math.min(sturges, MAX_BINS);
  const width = (2 * iqr) / Math.cbrt(n);
  return Math.max(1, Math.min(MAX_BINS, Math.ceil(range / width)));
}

/** 1, 2, 2.5 or 5 times a power of ten, at least `step`: bin edges people can read. */
export function niceStep(step: number): number {
  const power = 10 ** Math.floor(Math.log10(step));
  const nice = [1, 2, 2.5, 5, 10].find((m) => m * power >= step * (1 - 1e-9))!;
  return Math.max(1, nice * power);
}

/** Equal-width bins with round edges covering every duration; the last bin includes its end. */
export function histogramBins(durationsNs: readonly number[]): Bin[] {
  if (durationsNs.length === 0) return [];
  const sorted = [...durationsNs].sort((a, b) => a - b);
  const minNs = sorted[0]!;
  const maxNs = sorted[sorted.length - 1]!;
  if (minNs === maxNs) {
    return [
      { startNs: minNs, endNs: maxNs, count: sorted.length, members: durationsNs.map((_, i) => i) },
    ];
  }
  const width = niceStep((maxNs - minNs) / binCount(sorted));
  const firstNs = Math.floor(minNs / width) * width;
  const count = Math.max(1, Math.ceil((maxNs - firstNs) / width));
  const bins: Bin[] = Array.from({ length: count }, (_, i) => ({
    startNs: firstNs + i * width,
    endNs: firstNs + (i + 1) * width,
    count: 0,
    members: [],
  }));
  durationsNs.forEach((ns, index) => {
    // A maximum that sits exactly on the last edge belongs to the last bin, not a new one.
    const bin = bins[Math.min(count - 1, Math.floor((ns - firstNs) / width))]!;
    bin.count += 1;
    bin.members.push(index);
  });
  return bins;
}

export type Summary = {
  count: number;
  minNs: number;
  maxNs: number;
  meanNs: number;
  medianNs: number;
  p95Ns: number;
};

export function summarize(durationsNs: readonly number[]): Summary | null {
  if (durationsNs.length === 0) return null;
  const sorted = [...durationsNs].sort((a, b) => a - b);
  const totalNs = sorted.reduce((sum, ns) => sum + ns, 0);
  return {
    count: sorted.length,
    minNs: sorted[0]!,
    maxNs: sorted[sorted.length - 1]!,
    meanNs: totalNs / sorted.length,
    medianNs: quantile(sorted, 0.5),
    p95Ns: quantile(sorted, 0.95),
  };
}

/** The most names a bar's tooltip lists (e.g. which steps were that slow). */
const MAX_NAMED = 8;

/** In the unit of the longest duration, to at most four significant digits. */
function edgeLabel(ns: number, unit: DurationUnit): string {
  return String(Number((ns / unit.ns).toPrecision(4)));
}

function binLabel(bin: Bin, unit: DurationUnit): string {
  const start = edgeLabel(bin.startNs, unit);
  return bin.startNs === bin.endNs ? start : `${start}–${edgeLabel(bin.endNs, unit)}`;
}

/**
 * Bars of a duration histogram labelled by their range; hovering one gives its range, how
 * many durations it holds and, when few, their names.
 */
export function durationBars(
  durationsNs: readonly number[],
  noun: string,
  names: readonly string[] = [],
): { bars: Bar[]; unit: DurationUnit } {
  const bins = histogramBins(durationsNs);
  const unit = unitFor(bins[bins.length - 1]?.endNs ?? 0);
  const bars = bins.map((bin) => {
    const named = names.length ? bin.members.map((i) => names[i]).filter(Boolean) : [];
    const range =
      bin.startNs === bin.endNs
        ? formatDuration(bin.startNs)
        : `${formatDuration(bin.startNs)} – ${formatDuration(bin.endNs)}`;
    return {
      label: binLabel(bin, unit),
      value: bin.count,
      tip: {
        title: range,
        lines: [
          `${plural(bin.count, noun)} (${formatPercent(bin.count, durationsNs.length)})`,
          ...(named.length > 0 && named.length <= MAX_NAMED ? [named.join(", ")] : []),
        ],
      },
    };
  });
  return { bars, unit };
}
