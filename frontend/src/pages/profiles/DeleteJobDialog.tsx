import { useDeleteJob } from "../../api/jobChanges";
import type { TrainingJob } from "../../api/types";
import { Dialog } from "../../components/Dialog";
import { ErrorAlert } from "../../components/Feedback";
import { formatBytes } from "../../lib/format";

type Props = { job: TrainingJob; onClose: () => void; onDeleted: () => void };

/** Asks before a job and all its data go, naming the job and what it holds. */
export function DeleteJobDialog({ job, onClose, onDeleted }: Props) {
  const remove = useDeleteJob();
  const parts = job.parts_total === 1 ? "1 uploaded file" : `${job.parts_total} uploaded files`;
  return (
    <Dialog title={`Delete ${job.name}?`} onClose={onClose}>
      <p>
        This deletes the job <strong>{job.name}</strong> for everyone: its {parts} (
        <strong data-testid="delete-size">{formatBytes(job.size_bytes)}</strong>), their parsed data
        and timelines, and its insights. Whoever has it loaded has it unloaded. This cannot be
        undone.
      </p>
      {remove.isError && <ErrorAlert error={remove.error} />}
      <div className="form-actions">
        <button type="button" className="btn" onClick={onClose}>
          Cancel
        </button>
        <button
          type="button"
          className="btn btn-danger"
          disabled={remove.isPending}
          onClick={() => remove.mutate(job.id, { onSuccess: onDeleted })}
        >
          {remove.isPending ? "Deleting…" : "Delete job"}
        </button>
      </div>
    </Dialog>
  );
}
