import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link, useNavigate, useSearchParams } from "react-router";
import { ApiError } from "../../api/client";
import { jobsKey, useJobs } from "../../api/jobs";
import { loadedProfileKey, useLoadedJob, useReplaceProfile } from "../../api/loadedProfile";
import { EmptyState, ErrorAlert, Loading } from "../../components/Feedback";
import { Pagination } from "../../components/Pagination";
import { jobPath } from "../../lib/jobPath";
import { compareLink } from "../../lib/navigation";
import { DemoOffer } from "./DemoOffer";
import { JobFilters } from "./JobFilters";
import { LoadedProfileSection } from "./LoadedProfileSection";
import { JobTable } from "./JobTable";
import { UploadCard } from "./UploadCard";
import {
  hasFilters,
  type ListState,
  readListState,
  toJobListQuery,
  writeListState,
} from "./listQuery";

// The API's page size (REST_FRAMEWORK.PAGE_SIZE); the count of pages is derived from it.
const PAGE_SIZE = 50;
// After a demo starts, the list looks for its job this often, for at most this long.
const DEMO_POLL_MS = 5_000;
const DEMO_WAIT_MS = 5 * 60_000;

export function ProfilesPage() {
  const [params, setParams] = useSearchParams();
  const state = readListState(params);
  const [demoStartedAtMs, setDemoStartedAtMs] = useState<number | null>(null);
  const jobs = useJobs(toJobListQuery(state), (query) =>
    demoStartedAtMs !== null &&
    query.state.data?.count === 0 &&
    Date.now() - demoStartedAtMs < DEMO_WAIT_MS
      ? DEMO_POLL_MS
      : false,
  );
  const loadedJob = useLoadedJob();
  const { load, unload, replace } = useReplaceProfile();
  const queryClient = useQueryClient();
  const [selectedId, setSelectedId] = useState<number | null>(null);
  // The job the last Load was for: refused while another is loaded, or loaded (then its link).
  const [asked, setAsked] = useState<{ id: number; name: string } | null>(null);

  const update = (changes: Partial<ListState>) => {
    // Any change but paging starts again at the first page.
    const page = changes.page ?? 1;
    setParams(writeListState({ ...state, ...changes, page }), { replace: true });
  };

  const loadJob = (id: number, name: string) => {
    unload.reset();
    setAsked({ id, name });
    load.mutate(id, { onSuccess: () => setSelectedId(null) });
  };

  const loadSelected = () => {
    if (selectedId === null) return;
    loadJob(selectedId, selectedName ?? `job ${selectedId}`);
  };

  // One profile is loaded at a time (the spec): the refusal offers the unload and the load as
  // one action that names both.
  const unloadThenLoad = async (id: number, name: string) => {
    load.reset();
    setAsked({ id, name });
    await replace(id, true);
    setSelectedId(null);
  };
  const refusedAsLoaded =
    load.error instanceof ApiError && load.error.status === 409 && asked !== null;

  const unloadCurrent = () => {
    // The refusal to load a second profile no longer applies once the first is unloaded.
    load.reset();
    unload.mutate();
  };

  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: jobsKey });
    void queryClient.invalidateQueries({ queryKey: loadedProfileKey });
  };

  const selectedName = jobs.data?.results.find((job) => job.id === selectedId)?.name;
  const navigate = useNavigate();
  const loadedId = loadedJob.loaded.data?.job ?? null;
  const canCompare = selectedId !== null && loadedId !== null && selectedId !== loadedId;

  return (
    <>
      <h1>Profiles</h1>
      <LoadedProfileSection
        loadedJob={loadedJob}
        unloading={unload.isPending}
        unloadError={unload.error}
        onUnload={unloadCurrent}
      />
      <UploadCard />
      <section className="card" aria-labelledby="jobs-heading">
        <div className="card-header">
          <h2 id="jobs-heading">Training jobs</h2>
          <div className="actions">
            <button type="button" className="btn" onClick={refresh} disabled={jobs.isFetching}>
              {jobs.isFetching ? "Refreshing…" : "Refresh"}
            </button>
            <button
              type="button"
              className="btn btn-primary"
              onClick={loadSelected}
              disabled={selectedId === null || load.isPending}
              title={
                selectedId === null
                  ? "Select a job first"
                  : `Load ${selectedName ?? "the selected job"}`
              }
            >
              {load.isPending ? "Loading…" : "Load"}
            </button>
            <button
              type="button"
              className="btn"
              disabled={!canCompare}
              onClick={() => canCompare && navigate(compareLink(loadedId, selectedId))}
              title={
                canCompare
                  ? `Compare ${selectedName ?? "the selected job"} with the loaded profile`
                  : "Load a profile and select another job to compare them"
              }
            >
              Compare with loaded
            </button>
          </div>
        </div>
        {load.isError && <ErrorAlert error={load.error} />}
        {refusedAsLoaded && loadedJob.loaded.data && (
          <p>
            <button
              type="button"
              className="btn btn-small"
              disabled={unload.isPending || load.isPending}
              onClick={() => void unloadThenLoad(asked.id, asked.name).catch(() => undefined)}
            >
              Unload {loadedJob.loaded.data.job_detail.name} and load {asked.name}
            </button>
          </p>
        )}
        {load.isSuccess && asked !== null && load.data.job === asked.id && (
          <p className="alert alert-info" role="status">
            Loaded <strong>{asked.name}</strong>.{" "}
            <Link to={jobPath(asked.id, "dashboard")}>Open its dashboard</Link>
          </p>
        )}
        <JobFilters state={state} onChange={update} />
        {jobs.isPending && <Loading what="training jobs" />}
        {jobs.isError && <ErrorAlert error={jobs.error} />}
        {jobs.data &&
          jobs.data.count === 0 &&
          (hasFilters(state) ? (
            <EmptyState title="No jobs match these filters">
              <p>
                Change the search text, the dates, the statuses or the tags, or clear the filters.
              </p>
            </EmptyState>
          ) : (
            <EmptyState title="No training jobs yet">
              <p>
                A job appears here as soon as a training script that runs the collector uploads its
                first part, or when existing PyTorch profiler traces are dropped on{" "}
                <strong>Upload traces</strong> above or uploaded with <code>profiler-collect</code>.
              </p>
              <DemoOffer onStarted={() => setDemoStartedAtMs(Date.now())} />
            </EmptyState>
          ))}
        {jobs.data && jobs.data.count > 0 && (
          <>
            <div className={jobs.isPlaceholderData ? "table-wrap stale" : "table-wrap"}>
              <JobTable
                jobs={jobs.data.results}
                ordering={state.ordering}
                onOrdering={(ordering) => update({ ordering })}
                selectedId={selectedId}
                onSelect={setSelectedId}
                loadedId={loadedJob.loaded.data?.job ?? null}
                onTag={(tag) => !state.tags.includes(tag) && update({ tags: [...state.tags, tag] })}
                onDeleted={(job) => job.id === selectedId && setSelectedId(null)}
              />
            </div>
            <Pagination
              page={state.page}
              pageSize={PAGE_SIZE}
              count={jobs.data.count}
              onPage={(page) => update({ page })}
            />
          </>
        )}
      </section>
    </>
  );
}
