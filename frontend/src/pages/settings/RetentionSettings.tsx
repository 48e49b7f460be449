import { type FormEvent, type ReactNode, useMemo, useState } from "react";
import { ApiError } from "../../api/client";
import { useRetentionPreview, useUpdateAppSettings } from "../../api/settings";
import type { AppSettings, RetentionPreview } from "../../api/types";
import { type DataColumn, Table } from "../../components/DataTable";
import { ErrorAlert, FieldErrors } from "../../components/Feedback";
import { SaveActions } from "../../components/SaveActions";
import { formatBytes, formatDateTime } from "../../lib/format";
import { useDebounced } from "../../lib/useDebounced";
import "./retention.css";

const PREVIEW_DELAY_MS = 400;
const WHOLE_DAYS = /^\d+$/;

function typed(days: number | null | undefined): string {
  return days === null || days === undefined ? "" : String(days);
}

/** Staff: how long raw uploads and inactive jobs are kept, with what would go now. */
export function RetentionSettings({ saved }: { saved: AppSettings }) {
  const update = useUpdateAppSettings();
  const [raw, setRaw] = useState(typed(saved.retention_raw_days));
  const [jobs, setJobs] = useState(typed(saved.retention_jobs_days));
  const [justSaved, setJustSaved] = useState(false);
  const [notWhole, setNotWhole] = useState<string[]>([]);
  const days = useMemo(() => ({ raw: raw.trim(), jobs: jobs.trim() }), [raw, jobs]);
  const settled = useDebounced(days, PREVIEW_DELAY_MS);
  const valid = [settled.raw, settled.jobs].every(
    (value) => value === "" || WHOLE_DAYS.test(value),
  );
  const preview = useRetentionPreview(settled, valid);
  const fieldErrors = update.error instanceof ApiError ? update.error.fieldErrors : {};
  const rawErrors = notWhole.includes("raw")
    ? [WHOLE_MESSAGE]
    : (fieldErrors.retention_raw_days ?? []);
  const jobsErrors = notWhole.includes("jobs")
    ? [WHOLE_MESSAGE]
    : (fieldErrors.retention_jobs_days ?? []);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setJustSaved(false);
    const wrong = (["raw", "jobs"] as const).filter(
      (key) => days[key] !== "" && !WHOLE_DAYS.test(days[key]),
    );
    setNotWhole([...wrong]);
    if (wrong.length) return;
    const asDays = (value: string) => (value === "" ? null : Number(value));
    update.mutate(
      { retention_raw_days: asDays(days.raw), retention_jobs_days: asDays(days.jobs) },
      { onSuccess: () => setJustSaved(true) },
    );
  };

  const edit = (set: (value: string) => void) => (value: string) => {
    set(value);
    setJustSaved(false);
    setNotWhole([]);
  };

  return (
    <section className="card settings-card" aria-labelledby="retention-heading">
      <h2 id="retention-heading">Retention</h2>
      <p className="muted">
        Frees disk space by deleting old data, once a day. Both are off until you enter a number of
        days; leave a field empty to keep that kind of data forever.
      </p>
      <form onSubmit={submit} noValidate>
        <DaysField
          label="Delete raw uploads after (days)"
          name="retention_raw_days"
          value={raw}
          errors={rawErrors}
          onChange={edit(setRaw)}
        >
          The uploaded trace files of parsed parts, that many days after their upload. Every page
          still shows their data, but they can no longer be reprocessed or downloaded.
        </DaysField>
        <DaysField
          label="Delete inactive jobs after (days)"
          name="retention_jobs_days"
          value={jobs}
          errors={jobsErrors}
          onChange={edit(setJobs)}
        >
          Whole jobs with all their data, once that many days have passed since the job was created
          or last received an upload, whichever is later.
        </DaysField>
        {update.isError && !rawErrors.length && !jobsErrors.length && (
          <ErrorAlert error={update.error} />
        )}
        <SaveActions label="Save retention" pending={update.isPending} saved={justSaved} />
      </form>
      <h3 className="retention-preview-heading">What would be deleted now</h3>
      {preview.isError && <ErrorAlert error={preview.error} />}
      {preview.data && valid && <PreviewList preview={preview.data} />}
    </section>
  );
}

/** A number of days (empty: keep forever), what it deletes, and the server's objections. */
function DaysField(props: {
  label: string;
  name: string;
  value: string;
  errors: string[];
  onChange: (value: string) => void;
  children: ReactNode;
}) {
  return (
    <>
      <label className="field field-narrow">
        <span>{props.label}</span>
        <input
          type="number"
          name={props.name}
          min={1}
          step={1}
          inputMode="numeric"
          value={props.value}
          aria-invalid={props.errors.length > 0}
          onChange={(event) => props.onChange(event.target.value)}
        />
      </label>
      <p className="muted field-note">{props.children}</p>
      <FieldErrors messages={props.errors} />
    </>
  );
}

const WHOLE_MESSAGE = "Enter a whole number of days, or leave the field empty.";

const JOB_COLUMNS: DataColumn<RetentionPreview["jobs"][number]>[] = [
  { key: "name", label: "Job" },
  { key: "owner", label: "Owner", cell: (job) => job.owner ?? "—" },
  {
    key: "last_activity_at",
    label: "Last activity",
    className: "nowrap",
    cell: (job) => formatDateTime(job.last_activity_at),
  },
  { key: "bytes", label: "Size", className: "nowrap", format: formatBytes },
];

const RAW_FILE_COLUMNS: DataColumn<RetentionPreview["raw_files"][number]>[] = [
  { key: "file", label: "Raw file", className: "mono" },
  { key: "job_name", label: "Job" },
  {
    key: "uploaded_at",
    label: "Uploaded",
    className: "nowrap",
    cell: (file) => formatDateTime(file.uploaded_at),
  },
  { key: "bytes", label: "Size", className: "nowrap", format: formatBytes },
];

function PreviewList({ preview }: { preview: RetentionPreview }) {
  const { jobs, raw_files: rawFiles } = preview;
  const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
  return (
    <div data-testid="retention-preview">
      <p className="settings-summary">
        {jobs.length || rawFiles.length
          ? `${count(jobs.length, "job", "jobs")} and ${count(rawFiles.length, "raw file", "raw files")}, ` +
            `freeing ${formatBytes(preview.total_bytes)}.`
          : "Nothing: no data is old enough."}
      </p>
      {jobs.length > 0 && (
        <Table
          label="Jobs to delete"
          className="table-compact retention-table"
          rows={jobs}
          columns={JOB_COLUMNS}
          rowKey={(job) => job.id}
        />
      )}
      {rawFiles.length > 0 && (
        <Table
          label="Raw files to delete"
          className="table-compact retention-table"
          rows={rawFiles}
          columns={RAW_FILE_COLUMNS}
          rowKey={(file) => file.part}
        />
      )}
    </div>
  );
}
