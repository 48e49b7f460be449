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
