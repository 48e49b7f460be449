import { useNavigate } from "react-router";
import type { useLoadedJob } from "../../api/loadedProfile";
import type { TrainingJob } from "../../api/types";
import { PartialBadge, StatusBadge } from "../../components/Badges";
import { ErrorAlert, Loading } from "../../components/Feedback";
import { ProcessingProgress } from "../../components/ProcessingProgress";
import { TrashIcon } from "../../components/TrashIcon";
import { formatBytes, formatDateTime } from "../../lib/format";
import { isPartial } from "../../lib/jobs";
import { jobPath } from "../../lib/jobPath";

type Props = {
  loadedJob: ReturnType<typeof useLoadedJob>;
  unloading: boolean;
  unloadError: Error | null;
  onUnload: () => void;
};

export function LoadedProfileSection({ loadedJob, unloading, unloadError, onUnload }: Props) {
  const { loaded, job } = loadedJob;
  return (
    <section className="card" aria-labelledby="loaded-heading">
      <h2 id="loaded-heading">Loaded profile</h2>
      {(loaded.isPending || (loaded.data && job.isPending)) && (
        <Loading what="the loaded profile" />
      )}
      {loaded.isError && <ErrorAlert error={loaded.error} />}
      {job.isError && <ErrorAlert error={job.error} />}
      {unloadError && <ErrorAlert error={unloadError} />}
      {loaded.data === null && (
        <p className="muted">
          No profile loaded. Select a training job below and press <strong>Load</strong>; the
          Dashboard, Timeline, Insights and Info pages then show it.
        </p>
      )}
      {loaded.data && job.data && (
        <LoadedJobRow job={job.data} unloading={unloading} onUnload={onUnload} />
      )}
    </section>
  );
}

function LoadedJobRow({
  job,
  unloading,
  onUnload,
}: {
  job: TrainingJob;
  unloading: boolean;
  onUnload: () => void;
}) {
  const navigate = useNavigate();
  return (
    <div className="loaded-row" data-testid="loaded-profile">
      {/* Choosing the loaded job opens its dashboard, as in the profiler this app mirrors. */}
      <label className="loaded-open" title="Open the dashboard">
        <input
          type="radio"
          name="loaded-profile"
          checked={false}
          aria-label={`Open the dashboard for ${job.name}`}
          onChange={() => navigate(jobPath(job.id, "dashboard"))}
        />
        <span className="job-name">{job.name}</span>
      </label>
      <StatusBadge status={job.status} />
      {isPartial(job) && <PartialBadge />}
      <span className="muted">Created {formatDateTime(job.created_at)}</span>
      <span className="muted">
        {job.nodes.length} {job.nodes.length === 1 ? "node" : "nodes"}
      </span>
      <span className="muted">{formatBytes(job.size_bytes)}</span>
      <ProcessingProgress {...job} />
      {/* The trash-bin icon unloads, as in the profiler this app mirrors; the word says it
          only unloads (the job and its data stay), so it does not read as Delete. */}
      <button
        type="button"
        className="btn btn-small btn-unload"
        aria-label={`Unload ${job.name}`}
        title="Unload: the job stays in the catalogue"
        disabled={unloading}
        onClick={onUnload}
      >
        <TrashIcon /> {unloading ? "Unloading…" : "Unload"}
      </button>
    </div>
  );
}
