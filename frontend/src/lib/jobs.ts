import type { JobState, JobStatus, PartState, TrainingJob, User } from "../api/types";
import { formatBytes } from "./format";

export const JOB_STATUSES: { value: JobStatus; label: string }[] = [
  { value: "in_progress", label: "In Progress" },
  { value: "completed", label: "Completed" },
  { value: "failed", label: "Failed" },
  { value: "stopped", label: "Stopped" },
  { value: "stopping", label: "Stopping" },
];

export function statusLabel(status: JobStatus | undefined): string {
  return JOB_STATUSES.find((s) => s.value === status)?.label ?? "Unknown";
}

/** The states the catalog shows and filters on: the status checked against parts and uploads. */
export const JOB_STATES: { value: JobState; label: string }[] = [
  { value: "in_progress", label: "In Progress" },
  { value: "completed", label: "Completed" },
  { value: "failed", label: "Failed" },
  { value: "partial", label: "Partly failed" },
  { value: "interrupted", label: "Upload interrupted" },
  { value: "stopped", label: "Stopped" },
  { value: "stopping", label: "Stopping" },
];

export function stateLabel(state: JobState): string {
  return JOB_STATES.find((s) => s.value === state)?.label ?? "Unknown";
}

type JobStateFacts = Pick<
  TrainingJob,
  | "state"
  | "parts_total"
  | "parts_failed"
  | "uploads_interrupted"
  | "interrupted_received_bytes"
  | "interrupted_size_bytes"
>;

/** What the state rests on, in words: "2 of 5 parts failed", "6 B of 40 B arrived". */
export function stateDetail(job: JobStateFacts): string | null {
  if (job.state === "interrupted") {
    const uploads =
      job.uploads_interrupted === 1 ? "1 upload" : `${job.uploads_interrupted} uploads`;
    return `${uploads} stopped: ${formatBytes(job.interrupted_received_bytes)} of ${formatBytes(job.interrupted_size_bytes)} arrived`;
  }
  if (job.state === "failed" || job.state === "partial") {
    if (!job.parts_failed) return null;
    return `${job.parts_failed} of ${job.parts_total} ${job.parts_total === 1 ? "part" : "parts"} failed`;
  }
  return null;
}

export const PART_STATE_LABELS: Record<PartState, string> = {
  pending: "Pending",
  processing: "Processing",
  done: "Done",
  failed: "Failed",
};

type JobProgress = Pick<TrainingJob, "status" | "parts_total" | "parts_done" | "parts_failed">;

/** Parts not yet finished one way or the other (pending or processing). */
export function partsOutstanding(job: JobProgress): number {
  return Math.max(0, job.parts_total - job.parts_done - job.parts_failed);
}

/**
 * A job's data is partial while training still runs (more parts will arrive) or while some
 * uploaded parts are still being processed: views show what has arrived so far.
 */
export function isPartial(job: JobProgress): boolean {
  return job.status === "in_progress" || job.status === "stopping" || partsOutstanding(job) > 0;
}

/**
 * Whether `user` may rename, tag, add to or delete `job`: its owner or staff. Everyone signed in
 * sees every job; the server refuses the others' changes whatever the page shows.
 */
export function canChange(job: Pick<TrainingJob, "owner">, user: User | null | undefined): boolean {
  if (!user) return false;
  return user.is_staff || (job.owner !== null && job.owner === user.username);
}

/** A tag as the server accepts it: 1–40 letters, digits, "-", "_", "." or ":". */
export const TAG_PATTERN = /^[A-Za-z0-9_.:-]{1,40}$/;
export const MAX_TAGS = 20;

/** Tags typed in one box, separated by spaces or commas; each once, in the order typed. */
export function parseTags(text: string): string[] {
  return [...new Set(text.split(/[\s,]+/).filter(Boolean))];
}
