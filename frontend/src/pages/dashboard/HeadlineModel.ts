import type { Insights } from "../../api/insights";
import type { TrainingJob } from "../../api/types";

/** How the breakdown names each part, in the order the server gives them. */
export const PART_LABELS: Record<string, string> = {
  kernels: "GPU kernels",
  copies: "Memory copies",
  sets: "Memory sets",
  // GPU idle while the host synchronises: the host's waits while the GPU works count as GPU
  // work here (Insights' Synchronization rule measures those), so the label says which.
  sync_waits: "Sync (GPU idle)",
  data_loading: "Data loading",
  host_only: "Host only (GPU idle)",
  idle: "Idle",
};

/** A part's label; on a job without a GPU, host time is not time the GPU idled. */
export function partLabel(part: string, hasGpu: boolean): string {
  if (part === "host_only" && !hasGpu) return "Host time (no GPU)";
  return PART_LABELS[part] ?? part;
}

/** The parts a GPU's work makes (none on a job without a GPU: they are left out there). */
const GPU_PARTS = new Set(["kernels", "copies", "sets", "sync_waits"]);

/** The breakdown's rows to show: without a GPU, the GPU's parts (all zero) are not shown. */
export function shownParts<Row extends { part: string; total_ns: number }>(
  rows: Row[],
  hasGpu: boolean,
): Row[] {
  return hasGpu ? rows : rows.filter((row) => !GPU_PARTS.has(row.part) || row.total_ns > 0);
}

/** Whether the job ran on a GPU: false only where every node recorded none (a CPU-only
 * run), so that a job whose nodes say nothing keeps its GPU figures. */
export function jobHasGpu(job: Pick<TrainingJob, "nodes">): boolean {
  return !(job.nodes.length && job.nodes.every((node) => node.gpu_count === 0));
}

/** The finding to act on first: of the stored insights' rules (then recommendations) that
 * found an issue, one that others name as their cause (pageable copies starving the GPU, not
 * the under-used GPU), else the first that has no cause of its own, else the first. */
export function topFinding(insights: Insights | undefined) {
  const report = insights?.report;
  if (!report) return null;
  const issues = [...report.rules, ...(report.recommendations ?? [])].filter(
    (r) => r.status === "issue_found",
  );
  const causes = new Set(issues.map((r) => r.caused_by).filter(Boolean));
  return (
    issues.find((r) => causes.has(r.rule)) ?? issues.find((r) => !r.caused_by) ?? issues[0] ?? null
  );
}
