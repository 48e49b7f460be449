import { useEndUploads } from "../../api/jobs";
import type { TrainingJob } from "../../api/types";
import { Dialog } from "../../components/Dialog";
import { ErrorAlert } from "../../components/Feedback";
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
    <Dialog title={`Abandon the upload of ${job.name}?`} onClose={onClose}>
      <p>
        This deletes what arrived of the {uploads} of <strong>{job.name}</strong> (
        <strong data-testid="abandon-size">
          {formatBytes(job.interrupted_received_bytes)} of {formatBytes(job.interrupted_size_bytes)}
        </strong>
        ): they can no longer be resumed or finished. The files of the job that arrived whole stay.
        This cannot be undone.
      </p>
      {end.isError && <ErrorAlert error={end.error} />}
      <div className="form-actions">
        <button type="button" className="btn" onClick={onClose}>
          Cancel
        </button>
        <button
          type="button"
          className="btn btn-danger"
          disabled={end.isPending}
          onClick={() => end.mutate("abandon", { onSuccess: onClose })}
        >
          {end.isPending ? "Abandoning…" : "Abandon upload"}
        </button>
      </div>
    </Dialog>
  );
}
