import { useQueryClient } from "@tanstack/react-query";
import { type DragEvent, useEffect, useMemo, useRef, useState, useSyncExternalStore } from "react";
import { useMe } from "../../api/auth";
import { jobsKey, useJob, useJobParts, useJobs } from "../../api/jobs";
import { StatusBadge } from "../../components/Badges";
import { ErrorAlert } from "../../components/Feedback";
import { partsOutstanding } from "../../lib/jobs";
import { plural } from "../../lib/format";
import type { Target } from "../../upload/batch";
import { filesFromDrop, filesFromInput, type PickedFile } from "../../upload/files";
import { isActive, sendable } from "../../upload/rows";
import { UploadFileTable } from "./UploadFileTable";
import { uploads } from "./uploadStore";
import "./upload.css";

// While files go up or parts are parsed, the job list refreshes this often.
const POLL_MS = 2_000;

/** Drop or pick trace files; each becomes one part of a new or an existing job. */
export function UploadCard() {
  const state = useSyncExternalStore(uploads.subscribe, uploads.getSnapshot);
  const queryClient = useQueryClient();
  const [over, setOver] = useState(false);
  const [mode, setMode] = useState<"new" | "existing">("new");
  const [name, setName] = useState("");
  const [existing, setExisting] = useState<{ id: number; name: string } | null>(null);
  const filesInput = useRef<HTMLInputElement>(null);
  const folderInput = useRef<HTMLInputElement>(null);
  const job = useJob(state.job?.id);
  const parts = useJobParts(state.job?.id, 1);

  const partsById = useMemo(
    () => new Map((parts.data?.results ?? []).map((p) => [p.id, p])),
    [parts.data],
  );
  const parsing = job.data ? partsOutstanding(job.data) > 0 : false;
  const polling = state.running || parsing;

  useEffect(
    () => uploads.onJobsChanged(() => void queryClient.invalidateQueries({ queryKey: jobsKey })),
    [queryClient],
  );
  useEffect(() => {
    if (!polling) return;
    const timer = window.setInterval(
      () => void queryClient.invalidateQueries({ queryKey: jobsKey }),
      POLL_MS,
    );
    return () => window.clearInterval(timer);
  }, [polling, queryClient]);
  // React has no prop for picking a folder.
  useEffect(() => folderInput.current?.setAttribute("webkitdirectory", ""), []);

  const add = (picked: PickedFile[]) => {
    const folder = picked.find((p) => p.path.includes("/"))?.path.split("/")[0];
    if (folder && !name && state.job === null) setName(folder);
    void uploads.add(picked);
  };
  const drop = (event: DragEvent) => {
    event.preventDefault();
    setOver(false);
    void filesFromDrop(event.dataTransfer).then(add);
  };

  const target: Target | null = state.job
    ? { kind: "existing", id: state.job.id, name: state.job.name } // the batch's job, for a retry
    : mode === "new"
      ? { kind: "new", name }
      : existing && { kind: "existing", ...existing };
  const toSend = state.rows.filter(sendable).length;
  const active = state.rows.some(isActive);

  return (
    <section className="card" aria-labelledby="upload-heading">
      <div className="card-header">
        <h2 id="upload-heading">Upload traces</h2>
        {state.rows.length > 0 && !state.running && (
          <button type="button" className="btn btn-small" onClick={() => uploads.reset()}>
            {state.job ? "New upload" : "Clear"}
          </button>
        )}
      </div>
      <div
        className={over ? "drop-zone drop-over" : "drop-zone"}
        data-testid="upload-drop-zone"
        onDragOver={(e) => {
          e.preventDefault();
          e.dataTransfer.dropEffect = "copy";
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={drop}
      >
        <p>
          Drop PyTorch profiler traces (<code>.json</code>, <code>.json.gz</code>), TensorFlow or
          JAX profiles (<code>.xplane.pb</code>) or collector chunks (<code>.pcol</code>) here,
          files or whole folders: one part per file, each file's rank read from the trace.
        </p>
        <div className="actions">
          <button type="button" className="btn" onClick={() => filesInput.current?.click()}>
            Choose files…
          </button>
          <button type="button" className="btn" onClick={() => folderInput.current?.click()}>
            Choose a folder…
          </button>
        </div>
        <input
          ref={filesInput}
          type="file"
          multiple
          hidden
          aria-label="Trace files"
          onChange={(e) => {
            add(filesFromInput(e.target.files));
            e.target.value = "";
          }}
        />
        <input
          ref={folderInput}
          type="file"
          hidden
          aria-label="Trace folder"
          onChange={(e) => {
            add(filesFromInput(e.target.files));
            e.target.value = "";
          }}
        />
      </div>
      {state.reading > 0 && (
        <p className="muted" role="status">
          Reading {plural(state.reading, "file")}…
        </p>
      )}
      {state.skipped > 0 && (
        <p className="muted">
          {plural(state.skipped, "file")} in the folder {state.skipped === 1 ? "is" : "are"} not a
          trace (.json, .json.gz, .xplane.pb, .pcol) and {state.skipped === 1 ? "was" : "were"} left
          out.
        </p>
      )}
      {state.rows.length > 0 && (
        <>
          <UploadFileTable
            rows={state.rows}
            parts={partsById}
            onRank={(key, rank) => uploads.setRank(key, rank)}
            onNode={(key, node) => uploads.setNode(key, node)}
            onCancel={(key) => uploads.cancel(key)}
            onRemove={(key) => uploads.remove(key)}
          />
          {state.job ? (
            <p className="upload-target" data-testid="upload-target">
              {state.job.created ? "New job" : "Adding to"} <strong>{state.job.name}</strong>{" "}
              {job.data && <StatusBadge status={job.data.status} />}{" "}
              {job.data && (
                <span className="muted">
                  {job.data.parts_done} of {plural(job.data.parts_total, "part")} parsed
                  {job.data.parts_failed > 0 && `, ${job.data.parts_failed} failed`}
                </span>
              )}
            </p>
          ) : (
            <JobChooser
              mode={mode}
              onMode={setMode}
              name={name}
              onName={setName}
              existing={existing}
              onExisting={setExisting}
            />
          )}
          {state.error && <ErrorAlert error={state.error} />}
          <div className="form-actions">
            {toSend > 0 && (
              <button
                type="button"
                className="btn btn-primary"
                disabled={state.running || target === null}
                onClick={() => target && void uploads.start(target)}
              >
                {state.job
                  ? `Upload ${plural(toSend, "file")} to ${state.job.name}`
                  : `Upload ${plural(toSend, "file")}`}
              </button>
            )}
            {active && (
              <button type="button" className="btn" onClick={() => uploads.cancelAll()}>
                Cancel all
              </button>
            )}
          </div>
        </>
      )}
    </section>
  );
}

type Chosen = { id: number; name: string };

/** A new job's name, or one of the newest jobs to add the files to. */
function JobChooser({
  mode,
  onMode,
  name,
  onName,
  existing,
  onExisting,
}: {
  mode: "new" | "existing";
  onMode: (mode: "new" | "existing") => void;
  name: string;
  onName: (name: string) => void;
  existing: Chosen | null;
  onExisting: (job: Chosen | null) => void;
}) {
  // Only jobs this user may add parts to: their own (staff: every job).
  const me = useMe();
  const jobs = useJobs({ ordering: "-created_at", ...(me.data?.is_staff ? {} : { mine: true }) });
  return (
    <fieldset className="upload-job">
      <legend>Job</legend>
      <label className="chip">
        <input
          type="radio"
          name="upload-mode"
          checked={mode === "new"}
          onChange={() => onMode("new")}
        />
        New job
      </label>
      <input
        className="upload-job-name"
        aria-label="New job name"
        placeholder="e.g. resnet50-8gpu-run3"
        value={name}
        disabled={mode !== "new"}
        onChange={(e) => onName(e.target.value)}
      />
      <label className="chip">
        <input
          type="radio"
          name="upload-mode"
          checked={mode === "existing"}
          onChange={() => onMode("existing")}
        />
        Existing job
      </label>
      <select
        aria-label="Job to add to"
        value={existing?.id ?? ""}
        disabled={mode !== "existing"}
        onChange={(e) => {
          const job = jobs.data?.results.find((j) => j.id === Number(e.target.value));
          onExisting(job ? { id: job.id, name: job.name } : null);
        }}
      >
        <option value="">Choose a job</option>
        {jobs.data?.results.map((j) => (
          <option key={j.id} value={j.id}>
            {j.name}
          </option>
        ))}
      </select>
    </fieldset>
  );
}
