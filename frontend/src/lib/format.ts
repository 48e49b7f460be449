/**
 * Text for numbers shown to people: durations (integer nanoseconds inside the app), sizes,
 * shares, counts and dates. One definition each, so every page writes a value the same way.
 */

const NS_PER_S = 1e9;

export type DurationUnit = { label: "s" | "ms" | "µs" | "ns"; ns: number };

const DURATION_UNITS: DurationUnit[] = [
  { label: "s", ns: 1e9 },
  { label: "ms", ns: 1e6 },
  { label: "µs", ns: 1e3 },
  { label: "ns", ns: 1 },
];

/** The largest unit in which `ns` is at least 1 (ns for zero), so values read 1–999. */
export function unitFor(ns: number): DurationUnit {
  const magnitude = Math.abs(ns);
  return (
    DURATION_UNITS.find((unit) => magnitude >= unit.ns) ??
    DURATION_UNITS[DURATION_UNITS.length - 1]!
  );
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

const SIZE_UNITS = ["B", "kB", "MB", "GB", "TB", "PB"];

/** Decimal (SI) sizes, as file managers show them: 1 kB = 1000 B. */
export function formatBytes(sizeBytes: number): string {
  if (!Number.isFinite(sizeBytes) || sizeBytes < 0) return "—";
  let value = sizeBytes;
  let unit = 0;
  while (value >= 1000 && unit < SIZE_UNITS.length - 1) {
    value /= 1000;
    unit += 1;
  }
  const digits = unit === 0 || value >= 100 ? 0 : 1;
  return `${value.toFixed(digits)} ${SIZE_UNITS[unit]}`;
}

const dateTimeFormat = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
});

export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? "—" : dateTimeFormat.format(date);
}

/** "45 s", "12 min", "3 h 5 min", "2 d 4 h" — coarse, for elapsed wall-clock spans. */
export function formatElapsedMs(elapsedMs: number): string {
  const seconds = Math.max(0, Math.floor(elapsedMs / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
  const days = Math.floor(hours / 24);
  return hours % 24 ? `${days} d ${hours % 24} h` : `${days} d`;
}

export function formatAgo(iso: string | null | undefined, nowMs: number): string {
  if (!iso) return "—";
  const thenMs = new Date(iso).getTime();
  if (Number.isNaN(thenMs)) return "—";
  if (nowMs - thenMs < 60_000) return "less than a minute ago";
  return `${formatElapsedMs(nowMs - thenMs)} ago`;
}

/** Hours as a person writes them: 2, 0.5, 1.25 — never 2.0000000001. */
export function formatHours(hours: number): string {
  return `${Number(hours.toFixed(2))} h`;
}

/** The first instant of a local calendar day given as YYYY-MM-DD, as an ISO timestamp. */
export function startOfLocalDayIso(day: string): string {
  const [year, month, date] = day.split("-").map(Number);
  return new Date(year!, month! - 1, date!).toISOString();
}

/** The last millisecond of a local calendar day, so a "to" date includes that whole day. */
export function endOfLocalDayIso(day: string): string {
  const [year, month, date] = day.split("-").map(Number);
  return new Date(year!, month! - 1, date! + 1, 0, 0, 0, -1).toISOString();
}
