import type { JobNode } from "../../api/types";

/** "8" when every node agrees, "algo-1: 8, algo-2: 4" when they differ, "—" with no nodes;
 * "not recorded" where the profile did not say (a PyTorch trace does not list CPUs). */
export function perNodeSummary(nodes: JobNode[], field: "gpu_count" | "cpu_count"): string {
  if (nodes.length === 0) return "—";
  const counts = nodes.map((node) => node[field] ?? "not recorded");
  if (counts.every((count) => count === counts[0])) return String(counts[0]);
  return nodes.map((node, i) => `${node.name}: ${counts[i]}`).join(", ");
}

/** JSON values as one readable line: strings bare, everything else as compact JSON. */
export function displayValue(value: unknown): string {
  if (typeof value === "string") return value;
  return JSON.stringify(value) ?? String(value);
}
