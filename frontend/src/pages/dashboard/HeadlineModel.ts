import type { Insights } from "../../api/insights";

/** How the breakdown names each part, in the order the server gives them. */
export const PART_LABELS: Record<string, string> = {
  kernels: "GPU kernels",
  copies: "Memory copies",
  sets: "Memory sets",
  sync_waits: "Sync waits",
  data_loading: "Data loading",
  host_only: "Host only (GPU idle)",
  idle: "Idle",
};

/** The first rule (then recommendation) of the stored insights that found an issue. */
export function topFinding(insights: Insights | undefined) {
  const report = insights?.report;
  if (!report) return null;
  return (
    [...report.rules, ...(report.recommendations ?? [])].find((r) => r.status === "issue_found") ??
    null
  );
}
