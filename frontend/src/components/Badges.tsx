import type { JobStatus, PartState } from "../api/types";
import { PART_STATE_LABELS, statusLabel } from "../lib/jobs";

export function StatusBadge({ status }: { status: JobStatus | undefined }) {
  return <span className={`badge badge-status-${status ?? "unknown"}`}>{statusLabel(status)}</span>;
}

export function PartStateBadge({ state }: { state: PartState }) {
  return <span className={`badge badge-part-${state}`}>{PART_STATE_LABELS[state]}</span>;
}

export function PartialBadge() {
  return (
    <span
      className="badge badge-partial"
      title="Training is still running or some parts are still processing: views show the data received so far."
    >
      partial
    </span>
  );
}
