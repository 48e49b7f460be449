import type { ReactNode } from "react";
import { Link } from "react-router";
import { useLoadedJob } from "../api/loadedProfile";
import type { TrainingJob } from "../api/types";
import { EmptyState, ErrorAlert, Loading } from "./Feedback";

/** Renders its children for the user's loaded job, or explains how to load one. */
export function LoadedJobGate({ page, children }: {
  page: string;
  children: (job: TrainingJob) => ReactNode;
}) {
  const { loaded, job } = useLoadedJob();
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
  return children(job.data);
}
