/**
 * Evidence fields as a person reads them. Rules report figures under unit-suffixed names
 * ("step_ns", "share_pct", "h2d_bytes_per_s"); the page shows a word for the name and the value
 * in a readable unit, and keeps the raw value for the tooltip.
 */
import { formatBytes, formatDuration } from "../../lib/format";

/** Names whose words alone do not say what they are. */
const LABELS: Record<string, string> = {
  share_pct: "Share",
  // the rules sum the steps they judge: the time in them, not the step time of the Dashboard
  step_ns: "Time in steps",
  pct: "Share",
};

/** Unit suffixes, longest first, so "_bytes_per_s" wins over "_per_s". */
const SUFFIXES = ["_bytes_per_s", "_per_s", "_bytes", "_gbps", "_pct", "_ns", "_ms"];

/** Nanoseconds since 1970 from 2001 on: no duration in a profile is 31 years long. */
const EPOCH_NS_FROM = 1e18;

const dateTime = new Intl.DateTimeFormat("en-GB", {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  timeZone: "UTC",
  timeZoneName: "short",
});

/** "pageable_pct_of_steps": a share whose name says what of; reads "Pageable % of steps". */
const SHARE_OF = /_pct_of_/;

/** What a stem's unit adds to its name, where the stem alone would name two fields alike. */
const UNIT_WORDS: Record<string, string> = {
  _bytes: " size",
  _bytes_per_s: " rate",
  _per_s: " rate",
};

function suffixOf(key: string): string | undefined {
  if (SHARE_OF.test(key)) return "_pct";
  return SUFFIXES.find((suffix) => key.endsWith(suffix));
}

/** "share_pct" -> "Share", "step_ns" -> "Time in steps", "idle_gap_ns" -> "Idle gap". */
export function fieldLabel(key: string): string {
  const known = LABELS[key];
  if (known) return known;
  const suffix = SHARE_OF.test(key) ? undefined : suffixOf(key);
  const stem = suffix && key.length > suffix.length ? key.slice(0, -suffix.length) : key;
  const words = `${stem.replace(SHARE_OF, " % of ").replaceAll("_", " ").trim()}${
    (suffix && UNIT_WORDS[suffix]) ?? ""
  }`;
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function plainNumber(value: number): string {
  return Number.isInteger(value) ? value.toLocaleString("en-US") : value.toFixed(2);
}

function percent(value: number): string {
  if (value > 0 && value < 0.1) return "<0.1%";
  return `${value.toFixed(1)}%`;
}

/** A field's value in the unit its name carries: "1.483 s", "17.9%", "12.4 GB/s", a date. */
export function formatField(key: string, value: number): string {
  const suffix = suffixOf(key) ?? (key === "pct" ? "_pct" : undefined);
  switch (suffix) {
    case "_ns":
      return value >= EPOCH_NS_FROM
        ? dateTime.format(new Date(value / 1e6))
        : formatDuration(value);
    case "_ms":
      return formatDuration(value * 1e6);
    case "_pct":
      return percent(value);
    case "_bytes":
      return formatBytes(value);
    case "_bytes_per_s":
      return `${formatBytes(value)}/s`;
    case "_gbps":
      return `${value.toFixed(1)} GB/s`;
    case "_per_s":
      return `${plainNumber(value)}/s`;
    default:
      return plainNumber(value);
  }
}

/** The raw figure behind a formatted one, for the tooltip: "step_ns = 1,483,290,157". */
export function rawFieldText(key: string, value: unknown): string {
  const text = typeof value === "number" ? value.toLocaleString("en-US") : String(value);
  return `${key} = ${text}`;
}
