import { formatDuration } from "../dashboard/units";

const ID = /^\d+$/;

/** The two jobs of a shareable comparison link (`/compare?a=1&b=2`). */
export function readPair(params: URLSearchParams): { a: number | null; b: number | null } {
  const read = (name: string) => {
    const text = params.get(name);
    return text && ID.test(text) ? Number(text) : null;
  };
  return { a: read("a"), b: read("b") };
}

export function compareLink(a: number, b: number): string {
  return `/compare?${new URLSearchParams({ a: String(a), b: String(b) }).toString()}`;
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
  kernel_ns: "GPU kernel time",
  kernel_count: "GPU kernel runs",
  compute_kernel_ns: "Computation kernel time",
  comm_kernel_ns: "Communication kernel time",
  memcpy_ns: "Memory copy time",
  memset_ns: "Memory set time",
  sync_ns: "Synchronisation time",
  step_mean_ns: "Mean step time",
};

export function metricLabel(metric: string): string {
  return LABELS[metric] ?? metric;
}
