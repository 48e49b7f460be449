import { useQueryClient } from "@tanstack/react-query";
import { type ReactNode, useEffect, useState } from "react";
import { Link, useParams } from "react-router";
import { ApiError } from "../api/client";
import { useJobParts, useWatchedJob } from "../api/jobs";
import { loadedProfileKey, useLoadedProfile } from "../api/loadedProfile";
import type { DeletedJob, TrainingJob } from "../api/types";
import { formatDateTime } from "../lib/format";
import { jobIdOf } from "../lib/jobPath";
import { EmptyState, ErrorAlert, Loading } from "./Feedback";
import { useShowJob } from "./shownJobContext";

type GateProps = {
  page: string;
  children: (job: TrainingJob) => ReactNode;
  /** The page also serves a job whose every part failed (Info: its parts and their errors),
   * under the failure's panel rather than in its place. */
  evenFailed?: boolean;
};

/**
 * Renders its children for the job the address names (`/jobs/<id>/<page>`), else for the
 * user's loaded job, or explains how to load one. The job is watched while the page is open:
 * its deletion or the failure of every part shows within seconds.
 */
export function LoadedJobGate(props: GateProps) {
  const jobId = jobIdOf(useParams().jobId);
  return jobId === null ? (
    <LoadedGate {...props} />
  ) : (
    <AddressedGate key={jobId} jobId={jobId} {...props} />
  );
}

function AddressedGate({ jobId, page, children, evenFailed }: GateProps & { jobId: number }) {
  const loaded = useLoadedProfile();
  const job = useWatchedJob(jobId, loaded.data?.job_detail);
  // The header names this job, and offers to load it when it is not the loaded one.
  useShowJob(job.isError ? null : { id: jobId, name: job.data?.name ?? null });
  if (deletion(job.error)) return <JobDeleted error={job.error} />;
  if (job.error instanceof ApiError && job.error.status === 404) {
    return (
      <EmptyState title={`No job ${jobId}`}>
        <p>
          No training job has this address. Pick one on the <Link to="/profiles">Profiles</Link>{" "}
          page.
        </p>
      </EmptyState>
    );
  }
  if (job.isError) return <ErrorAlert error={job.error} />;
  if (!job.data) return <Loading what={`the ${page}`} />;
  return <JobOrFailure job={job.data} evenFailed={evenFailed} render={children} />;
}

function LoadedGate({ page, children, evenFailed }: GateProps) {
  const loaded = useLoadedProfile();
  const job = useWatchedJob(loaded.data?.job, loaded.data?.job_detail);
  // The deletion also unloads the job: the page keeps saying why rather than "No profile loaded".
  const [deleted, setDeleted] = useState<unknown>(null);
  const gone = deletion(job.error);
  if (gone && deleted === null) setDeleted(job.error);
  if (gone || (deleted !== null && !loaded.data))
    return <JobDeleted error={job.error ?? deleted} />;
  if (loaded.isError) return <ErrorAlert error={loaded.error} />;
  if (loaded.data === null) {
    return (
      <EmptyState title="No profile loaded">
        <p>
          The {page} shows the profile you have loaded. Pick a training job on the{" "}
          <Link to="/profiles">Profiles</Link> page and press <strong>Load</strong>.
        </p>
      </EmptyState>
    );
  }
  if (job.isError) return <ErrorAlert error={job.error} />;
  if (!job.data) return <Loading what="the loaded profile" />;
  return <JobOrFailure job={job.data} evenFailed={evenFailed} render={children} />;
}

/** Deleted since the page opened: 410 names who deleted it; 404 from a server without that. */
function deletion(error: unknown): error is ApiError {
  return error instanceof ApiError && (error.status === 410 || error.status === 404);
}

/** Every part failed: nothing of the job can be shown, so the page says why instead. */
function everyPartFailed(job: TrainingJob): boolean {
  return job.parts_total > 0 && job.parts_failed === job.parts_total;
}

function JobOrFailure({
  job,
  evenFailed,
  render,
}: {
  job: TrainingJob;
  evenFailed?: boolean;
  render: (job: TrainingJob) => ReactNode;
}) {
  if (!everyPartFailed(job)) return render(job);
  return (
    <>
      <FailedJob job={job} />
      {evenFailed && render(job)}
    </>
  );
}

/** A job none of whose parts could be read: Failed, and each part's reason. */
function FailedJob({ job }: { job: TrainingJob }) {
  const parts = useJobParts(job.id, 1);
  const failed = (parts.data?.results ?? []).filter((part) => part.state === "failed");
  const unlisted = job.parts_failed - failed.length;
  return (
    <section className="alert alert-error failed-job" data-testid="failed-job" role="alert">
      <h2 className="job-heading">
        {job.name} <span className="badge badge-status-failed">Failed</span>
      </h2>
      <p>
        {job.parts_total === 1
          ? "Its one part failed to process"
          : `All ${job.parts_total} of its parts failed to process`}
        , so there is nothing of it to show.
        {job.end_reason && ` ${job.end_reason}`}
      </p>
      {parts.isError && <ErrorAlert error={parts.error} />}
      {failed.length > 0 && (
        <ul className="failed-parts">
          {failed.map((part) => (
            <li key={part.id}>
              <strong>{part.original_name}</strong> ({part.node} rank {part.rank}):{" "}
              {part.error || "no reason was recorded"}
            </li>
          ))}
        </ul>
      )}
      {unlisted > 0 && <p>{`${unlisted} more failed parts are listed on the Info page.`}</p>}
    </section>
  );
}

/** The job was deleted (by its owner, while this person read it). */
function JobDeleted({ error }: { error: unknown }) {
  const queryClient = useQueryClient();
  // The deletion unloaded it wherever it was loaded: the header stops naming it.
  useEffect(
    () => void queryClient.invalidateQueries({ queryKey: loadedProfileKey }),
    [queryClient],
  );
  const gone =
    error instanceof ApiError && error.status === 410 ? (error.body as DeletedJob) : null;
  return (
    <EmptyState title="This job was deleted">
      <p data-testid="job-deleted">
        {gone ? (
          <>
            <strong>{gone.name}</strong> was deleted{" "}
            {gone.deleted_by ? (
              <>
                by <strong>{gone.deleted_by}</strong>
              </>
            ) : (
              "by the server's retention settings"
            )}{" "}
            on {formatDateTime(gone.deleted_at)}, with its traces.
          </>
        ) : (
          "Its owner deleted it, with its traces."
        )}{" "}
        Pick another training job on the <Link to="/profiles">Profiles</Link> page.
      </p>
    </EmptyState>
  );
}
