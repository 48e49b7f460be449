import { useEndUploads } from "../../api/jobs";
import type { TrainingJob } from "../../api/types";
import { ConfirmDialog } from "../../components/ConfirmDialog";
import { formatBytes } from "../../lib/format";

type Props = { job: TrainingJob; onClose: () => void };

/** Asks before what arrived of a job's stopped uploads is deleted, naming how much that is. */
export function AbandonUploadsDialog({ job, onClose }: Props) {
  const end = useEndUploads(job.id);
  const uploads =
    job.uploads_interrupted === 1
      ? "1 stopped upload"
      : `${job.uploads_interrupted} stopped uploads`;
  return (
    <ConfirmDialog
      title={`Abandon the upload of ${job.name}?`}
      confirmLabel="Abandon upload"
      pendingLabel="Abandoning…"
      pending={end.isPending}
      error={end.error}
      onConfirm={() => end.mutate("abandon", { onSuccess: onClose })}
      onClose={onClose}
    >
      This deletes what arrived of the {uploads} of <strong>{job.name}</strong> (
      <strong data-testid="abandon-size">
        {formatBytes(job.interrupted_received_bytes)} of {formatBytes(job.interrupted_size_bytes)}
      </strong>
      ): they can no longer be resumed or finished. The files of the job that arrived whole stay.
      This cannot be undone.
    </ConfirmDialog>
  );
}
