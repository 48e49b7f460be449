/** Unit formatting for dashboard numbers: durations arrive as integer nanoseconds. */

const NS_PER_S = 1e9;

export type DurationUnit = { label: "s" | "ms" | "µs" | "ns"; ns: number };

const UNITS: DurationUnit[] = [
  { label: "s", ns: 1e9 },
  { label: "ms", ns: 1e6 },
  { label: "µs", ns: 1e3 },
  { label: "ns", ns: 1 },
];

/** The largest unit in which `ns` is at least 1 (ns for zero), so values read 1–999. */
export function unitFor(ns: number): DurationUnit {
  const magnitude = Math.abs(ns);
  return UNITS.find((unit) => magnitude >= unit.ns) ?? UNITS[UNITS.length - 1]!;
}

/** Four significant digits at most, without trailing zeros: 12.35, 1.5, 1234. */
function significant(value: number): string {
  if (value === 0) return "0";
  const digits = Math.max(0, 3 - Math.floor(Math.log10(Math.abs(value))));
  return String(Number(value.toFixed(digits)));
}

/** A duration in the unit that suits it: "1.235 s", "12.35 ms", "850 µs", "42 ns". */
export function formatDuration(ns: number): string {
  const unit = unitFor(ns);
  return `${significant(ns / unit.ns)} ${unit.label}`;
}

/**
 * Seconds, as the dashboard reports time, to microsecond precision below a second (GPU
 * kernels run for microseconds) and millisecond precision above: "0.012346 s", "12.346 s".
 */
export function formatSeconds(ns: number): string {
  const seconds = ns / NS_PER_S;
  const decimals = Math.abs(seconds) >= 1 ? 3 : 6;
  return `${seconds.toFixed(decimals)} s`;
}

/** Seconds plus the same time in a readable unit where seconds hide it: "0.012346 s (12.35 ms)". */
export function formatSecondsWithUnit(ns: number): string {
  const seconds = formatSeconds(ns);
  return Math.abs(ns) >= NS_PER_S || ns === 0 ? seconds : `${seconds} (${formatDuration(ns)})`;
}

/** A share as a percentage, keeping tiny non-zero shares visible: "12.3%", "<0.1%". */
export function formatPercent(part: number, whole: number): string {
  if (whole <= 0) return "—";
  const percent = (100 * part) / whole;
  if (percent > 0 && percent < 0.1) return "<0.1%";
  return `${percent.toFixed(1)}%`;
}

export function formatCount(count: number): string {
  return count.toLocaleString("en-US");
}

/** "1 step", "3 steps" */
export function plural(count: number, noun: string, nouns = `${noun}s`): string {
  return `${formatCount(count)} ${count === 1 ? noun : nouns}`;
}
