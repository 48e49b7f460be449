/** Text for timeline values: offsets from the job's start and event fields. */
import { nsBetween } from "../../timeline/model";

/** A time as an offset from the job's origin, to the nanosecond: "1,204.512345 ms". */
export function formatOffset(ns: number): string {
  return `${(ns / 1e6).toLocaleString("en-US", { minimumFractionDigits: 6, maximumFractionDigits: 6 })} ms`;
}

export function offsetOf(originNs: string, absoluteNs: string): string {
  return formatOffset(nsBetween(originNs, absoluteNs));
}

export function formatDims(dims: number[] | undefined): string {
  return dims ? `(${dims.join(", ")})` : "—";
}
