import type { JobStatus, PartState, TrainingJob } from "../api/types";
import { PART_STATE_LABELS, stateDetail, stateLabel, statusLabel } from "../lib/jobs";

export function StatusBadge({ status }: { status: JobStatus | undefined }) {
  return <span className={`badge badge-status-${status ?? "unknown"}`}>{statusLabel(status)}</span>;
}

/** The job's state as its parts and uploads tell it, with what it rests on beside it. */
export function JobStateBadge({ job }: { job: TrainingJob }) {
  const detail = stateDetail(job);
  return (
    <span className="job-state">
      <span className={`badge badge-status-${job.state}`}>{stateLabel(job.state)}</span>
      {detail && <span className="job-state-detail">{detail}</span>}
    </span>
  );
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
