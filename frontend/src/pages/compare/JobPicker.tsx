import { useState } from "react";
import { Link } from "react-router";
import { useJob, useJobs } from "../../api/jobs";
import { jobPath } from "../../lib/jobPath";
import { useDebounced } from "../../lib/useDebounced";

const PAGE_SIZE = 50; // the API's page

/** A job chosen among every job the user can see: searched by name on the server, a page at a
 * time. */
export function JobPicker({
  label,
  value,
  onChange,
}: {
  label: string;
  value: number | null;
  onChange: (id: number | null) => void;
}) {
  const [text, setText] = useState("");
  const [page, setPage] = useState(1);
  const search = useDebounced(text.trim(), 250);
  const jobs = useJobs({ ordering: "-created_at", page, ...(search ? { search } : {}) });
  const chosen = useJob(value ?? undefined);
  const results = jobs.data?.results ?? [];
  const pages = Math.max(1, Math.ceil((jobs.data?.count ?? 0) / PAGE_SIZE));
  return (
    <fieldset className="job-picker">
      <legend>{label}</legend>
      <input
        type="search"
        placeholder="Search by name"
        value={text}
        aria-label={`${label}: search`}
        onChange={(e) => {
          setText(e.target.value);
          setPage(1);
        }}
      />
      <select
        value={value ?? ""}
        aria-label={label}
        onChange={(e) => onChange(e.target.value ? Number(e.target.value) : null)}
      >
        <option value="">
          {jobs.data ? `Choose a job (${jobs.data.count} found)` : "Choose a job"}
        </option>
        {results.map((job) => (
          <option key={job.id} value={job.id}>
            {job.name}
          </option>
        ))}
        {value !== null && !results.some((job) => job.id === value) && (
          <option value={value}>{chosen.data?.name ?? `Job ${value}`}</option>
        )}
      </select>
      {value !== null && (
        <Link className="job-picker-open" to={jobPath(value, "dashboard")}>
          Open its dashboard
        </Link>
      )}
      {pages > 1 && (
        <span className="job-picker-pages">
          <button
            type="button"
            className="btn btn-small"
            disabled={page <= 1}
            onClick={() => setPage(page - 1)}
          >
            Newer
          </button>
          <span className="muted">
            page {page} of {pages}
          </span>
          <button
            type="button"
            className="btn btn-small"
            disabled={page >= pages}
            onClick={() => setPage(page + 1)}
          >
            Older
          </button>
        </span>
      )}
    </fieldset>
  );
}
