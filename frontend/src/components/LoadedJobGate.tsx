import { useQueryClient } from "@tanstack/react-query";
import { type ReactNode, useEffect, useState } from "react";
import { Link } from "react-router";
import { ApiError } from "../api/client";
import { loadedProfileKey, useLoadedJob } from "../api/loadedProfile";
import type { TrainingJob } from "../api/types";
import { EmptyState, ErrorAlert, Loading } from "./Feedback";

/** Renders its children for the user's loaded job, or explains how to load one. */
export function LoadedJobGate({
  page,
  children,
}: {
  page: string;
  children: (job: TrainingJob) => ReactNode;
}) {
  const { loaded, job } = useLoadedJob();
  const gone = job.error instanceof ApiError && job.error.status === 404;
  // The deletion also unloads the job: the page keeps saying why rather than "No profile loaded".
  const [wasDeleted, setWasDeleted] = useState(false);
  if (gone && !wasDeleted) setWasDeleted(true);
  if (gone || (wasDeleted && !loaded.data)) return <JobDeleted />;
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

/** The loaded job was deleted (by its owner, while this person read it). */
function JobDeleted() {
  const queryClient = useQueryClient();
  // The deletion unloaded it: the header stops naming it.
  useEffect(
    () => void queryClient.invalidateQueries({ queryKey: loadedProfileKey }),
    [queryClient],
  );
  return (
    <EmptyState title="This job was deleted">
      <p>
        Its owner deleted it, with its traces. Pick another training job on the{" "}
        <Link to="/profiles">Profiles</Link> page.
      </p>
    </EmptyState>
  );
}
