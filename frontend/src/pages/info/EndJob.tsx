import { useMe } from "../../api/auth";
import { useUpdateJob } from "../../api/jobChanges";
import type { TrainingJob } from "../../api/types";
import { ErrorAlert } from "../../components/Feedback";
import { canChange } from "../../lib/jobs";

/** Why the server ended a job its sender never said had ended, and the owner's way to end a
 * job still marked as being sent (a killed process) or to reopen one the server ended. */
export function EndJob({ job }: { job: TrainingJob }) {
  const me = useMe();
  const update = useUpdateJob();
  const mine = canChange(job, me.data);
  const sending = job.status === "in_progress" || job.status === "stopping";
  const setStatus = (status: "stopped" | "in_progress") =>
    update.mutate({ id: job.id, changes: { status } });
  if (!job.end_reason && !(mine && sending)) return null;
  return (
    <div className="end-job">
      {job.end_reason && (
        <p className="notice" role="note">
          This job {job.end_reason}. It was stopped and judged from what arrived.
        </p>
      )}
      {mine && sending && (
        <button
          type="button"
          className="btn"
          disabled={update.isPending}
          onClick={() => setStatus("stopped")}
          title="Mark the job as ended (its process will send nothing more)"
        >
          End job
        </button>
      )}
      {mine && job.end_reason && (
        <button
          type="button"
          className="btn"
          disabled={update.isPending}
          onClick={() => setStatus("in_progress")}
          title="Mark the job as still being sent (it ends again after the same silence)"
        >
          Reopen
        </button>
      )}
      {update.isError && <ErrorAlert error={update.error} />}
    </div>
  );
}
