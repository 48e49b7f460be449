import { formatDuration } from "../../lib/format";

const ID = /^\d+$/;

/** The two jobs of a shareable comparison link (`/compare?a=1&b=2`). */
export function readPair(params: URLSearchParams): { a: number | null; b: number | null } {
  const read = (name: string) => {
    const text = params.get(name);
    return text && ID.test(text) ? Number(text) : null;
  };
  return { a: read("a"), b: read("b") };
}

/** "+1.5 ms", "−20 µs", "0 ns". */
export function signedDuration(ns: number): string {
  if (ns === 0) return "0 ns";
  return `${ns > 0 ? "+" : "−"}${formatDuration(Math.abs(ns))}`;
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
  step_mean_ns: "Mean step time",
};

export function metricLabel(metric: string): string {
  return LABELS[metric] ?? metric;
}
