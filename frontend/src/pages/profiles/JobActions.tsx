import { useState } from "react";
import { useMe } from "../../api/auth";
import { useEndUploads } from "../../api/jobs";
import type { TrainingJob } from "../../api/types";
import { canChange } from "../../lib/jobs";
import { AbandonUploadsDialog } from "./AbandonUploadsDialog";
import { DeleteJobDialog } from "./DeleteJobDialog";
import { EditJobDialog } from "./EditJobDialog";
import "./jobActions.css";

type Props = { job: TrainingJob; onDeleted: (job: TrainingJob) => void };

/** Edit and Delete for the jobs the signed-in user may change (its owner, or staff); nothing
 * for the others' jobs, which they may still read. */
export function JobActions({ job, onDeleted }: Props) {
  const me = useMe();
  const [open, setOpen] = useState<"edit" | "delete" | null>(null);
  if (!canChange(job, me.data)) return null;
  return (
    <span className="job-actions">
      {job.state === "interrupted" && <EndUploads job={job} />}
      <button
        type="button"
        className="btn btn-small"
        aria-label={`Edit ${job.name}`}
        onClick={() => setOpen("edit")}
      >
        Edit
      </button>
      <button
        type="button"
        className="btn btn-small btn-danger-quiet"
        aria-label={`Delete ${job.name}`}
        onClick={() => setOpen("delete")}
      >
        Delete
      </button>
      {open === "edit" && <EditJobDialog job={job} onClose={() => setOpen(null)} />}
      {open === "delete" && (
        <DeleteJobDialog
          job={job}
          onClose={() => setOpen(null)}
          onDeleted={() => {
            setOpen(null);
            onDeleted(job);
          }}
        />
      )}
    </span>
  );
}

/** A job whose upload stopped before its end: keep the files that arrived whole, or delete
 * what arrived (asked first: it cannot be undone). */
function EndUploads({ job }: { job: TrainingJob }) {
  const end = useEndUploads(job.id);
  const [abandoning, setAbandoning] = useState(false);
  return (
    <span className="end-uploads">
      <button
        type="button"
        className="btn btn-small"
        disabled={end.isPending}
        aria-label={`Finish the upload of ${job.name}`}
        title="Keep the files that arrived whole; drop those cut short"
        onClick={() => end.mutate("finish")}
      >
        Finish
      </button>
      <button
        type="button"
        className="btn btn-small btn-danger-quiet"
        disabled={end.isPending}
        aria-label={`Abandon the upload of ${job.name}`}
        title="Delete what arrived of the unfinished files"
        onClick={() => setAbandoning(true)}
      >
        Abandon
      </button>
      {abandoning && <AbandonUploadsDialog job={job} onClose={() => setAbandoning(false)} />}
      {end.error && (
        <span role="alert" className="error-text">
          {end.error.message}
        </span>
      )}
    </span>
  );
}
