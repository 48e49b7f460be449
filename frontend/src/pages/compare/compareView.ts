import type { WindowKind } from "../../api/types";
import { formatCount, formatDuration } from "../../lib/format";

const ID = /^\d+$/;

/** The two jobs of a shareable comparison link (`/compare?a=1&b=2`). */
export function readPair(params: URLSearchParams): { a: number | null; b: number | null } {
  const read = (name: string) => {
    const text = params.get(name);
    return text && ID.test(text) ? Number(text) : null;
  };
  return { a: read("a"), b: read("b") };
}

/** The window both jobs are compared in (`&window=complete_steps`); null: the one the viewer
 * sees job A in. */
export function readWindow(params: URLSearchParams): WindowKind | null {
  const text = params.get("window");
  return text === "whole_trace" || text === "complete_steps" ? text : null;
}

/** "+1.5 ms", "−20 µs", "0 ns". */
export function signedDuration(ns: number): string {
  if (ns === 0) return "0 ns";
  return `${ns > 0 ? "+" : "−"}${formatDuration(Math.abs(ns))}`;
}

/** A figure in its unit: a time (`…_ns`), a share (`…_pct`) or a count. */
export function formatFigure(metric: string, value: number | null | undefined): string {
  if (value === null || value === undefined) return "—";
  if (metric.endsWith("_ns")) return formatDuration(Math.round(value));
  if (metric.endsWith("_pct")) return `${value.toFixed(1)} %`;
  return Number.isInteger(value) ? formatCount(value) : value.toFixed(1);
}

/** B − A in the figure's unit, signed. */
export function formatChange(metric: string, delta: number): string {
  if (metric.endsWith("_ns")) return signedDuration(Math.round(delta));
  const sign = delta > 0 ? "+" : delta < 0 ? "−" : "";
  return `${sign}${formatFigure(metric, Math.abs(delta))}`;
}

/** Whether B's figure is better or worse than A's; null where the figure has no direction or
 * did not change. Judged on the figure per step and per rank only. */
export function verdict(
  better: "lower" | null | undefined,
  a: number | null | undefined,
  b: number | null | undefined,
): "better" | "worse" | null {
  if (better !== "lower" || a === null || a === undefined || b === null || b === undefined)
    return null;
  return b < a ? "better" : b > a ? "worse" : null;
}

const LABELS: Record<string, string> = {
  ranks: "Ranks",
  events: "Events",
  profile_ns: "Profile span",
  kernel_runs: "Kernel runs",
  kernel_ns: "Kernel time",
  gpu_op_runs: "GPU operations (kernels, copies, sets)",
  compute_ns: "Computation kernel time",
  comm_ns: "Communication kernel time",
  memory_ns: "Memory copy and set time",
  sync_ns: "Synchronisation time",
  step_mean_ns: "Mean of the steps (not the step time)",
  step_p50_ns: "Step time (median of the captured steps; of all steps if none were captured)",
  gpu_idle_pct: "GPU idle (share of utilisation points at 0 %)",
};

export function metricLabel(metric: string): string {
  return LABELS[metric] ?? metric;
}
