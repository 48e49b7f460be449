import { useDeleteJob } from "../../api/jobChanges";
import type { TrainingJob } from "../../api/types";
import { ConfirmDialog } from "../../components/ConfirmDialog";
import { formatBytes } from "../../lib/format";

type Props = { job: TrainingJob; onClose: () => void; onDeleted: () => void };

/** Asks before a job and all its data go, naming the job and what it holds. */
export function DeleteJobDialog({ job, onClose, onDeleted }: Props) {
  const remove = useDeleteJob();
  const parts = job.parts_total === 1 ? "1 uploaded file" : `${job.parts_total} uploaded files`;
  return (
    <ConfirmDialog
      title={`Delete ${job.name}?`}
      confirmLabel="Delete job"
      pendingLabel="Deleting…"
      pending={remove.isPending}
      error={remove.error}
      onConfirm={() => remove.mutate(job.id, { onSuccess: onDeleted })}
      onClose={onClose}
    >
      This deletes the job <strong>{job.name}</strong> for everyone: its {parts} (
      <strong data-testid="delete-size">{formatBytes(job.size_bytes)}</strong>), their parsed data
      and timelines, and its insights. Whoever has it loaded has it unloaded. This cannot be undone.
    </ConfirmDialog>
  );
}
