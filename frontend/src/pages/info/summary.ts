import type { JobNode, ProfilePart } from "../../api/types";

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

/** How long the part's last parse took (ns), from the worker's claim to its end, parsed or
 * failed; null while it waits or runs, or when no worker took it (refused at upload). */
export function parseNs(
  part: Pick<ProfilePart, "state" | "started_at" | "finished_at">,
): number | null {
  if (part.state !== "done" && part.state !== "failed") return null;
  if (!part.started_at || !part.finished_at) return null;
  return (Date.parse(part.finished_at) - Date.parse(part.started_at)) * 1e6;
}
