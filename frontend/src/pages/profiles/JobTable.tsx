import type { TrainingJob } from "../../api/types";
import { JobStateBadge, PartialBadge } from "../../components/Badges";
import { MissingRanksBadge } from "../../components/MissingRanks";
import { ReadWarningBadge } from "../../components/ReadWarnings";
import { ProcessingProgress } from "../../components/ProcessingProgress";
import { formatBytes, formatDateTime } from "../../lib/format";
import { isPartial } from "../../lib/jobs";
import { JobActions } from "./JobActions";
import { nextOrdering } from "./listQuery";
import "./tags.css";

type Props = {
  jobs: TrainingJob[];
  ordering: string;
  onOrdering: (ordering: string) => void;
  selectedId: number | null;
  onSelect: (id: number | null) => void;
  loadedId: number | null;
  /** A tag was clicked: show only the jobs with it. */
  onTag: (tag: string) => void;
  onDeleted: (job: TrainingJob) => void;
};

const SORTABLE = [
  { field: "name", label: "Name" },
  { field: "created_at", label: "Created" },
  { field: "status", label: "Status" },
] as const;

export function JobTable({
  jobs,
  ordering,
  onOrdering,
  selectedId,
  onSelect,
  loadedId,
  onTag,
  onDeleted,
}: Props) {
  const header = (field: string, label: string) => {
    const direction =
      ordering === field ? "ascending" : ordering === `-${field}` ? "descending" : "none";
    return (
      <th key={field} aria-sort={direction}>
        <button
          type="button"
          className="sort-button"
          onClick={() => onOrdering(nextOrdering(ordering, field))}
        >
          {label}
          <span className="sort-arrow" aria-hidden="true">
            {direction === "ascending" ? "▲" : direction === "descending" ? "▼" : ""}
          </span>
        </button>
      </th>
    );
  };

  return (
    <table className="table jobs-table">
      <thead>
        <tr>
          <th className="col-select">
            <span className="visually-hidden">Select</span>
          </th>
          {SORTABLE.map((column) => header(column.field, column.label))}
          <th>Owner</th>
          <th>Nodes</th>
          {header("size_bytes", "Size")}
          <th>Processing</th>
          <th>
            <span className="visually-hidden">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {jobs.map((job) => (
          <tr key={job.id} className={job.id === selectedId ? "selected" : undefined}>
            <td className="col-select">
              <input
                type="checkbox"
                aria-label={`Select ${job.name}`}
                checked={job.id === selectedId}
                onChange={(event) => onSelect(event.target.checked ? job.id : null)}
              />
            </td>
            <td className="col-name">
              <span className="job-name">{job.name}</span>
              {job.id === loadedId && <span className="badge badge-loaded">loaded</span>}
              {isPartial(job) && <PartialBadge />}
              <MissingRanksBadge jobId={job.id} />
              <ReadWarningBadge warnings={job.read_warnings} />
              {job.tags && job.tags.length > 0 && (
                <div className="job-tags">
                  {job.tags.map((tag) => (
                    <button
                      key={tag}
                      type="button"
                      className="tag"
                      onClick={() => onTag(tag)}
                      title={`Show only the jobs tagged ${tag}`}
                    >
                      {tag}
                    </button>
                  ))}
                </div>
              )}
              {job.notes && (
                <div className="job-notes" title={job.notes}>
                  {job.notes}
                </div>
              )}
            </td>
            <td className="nowrap">{formatDateTime(job.created_at)}</td>
            <td>
              <JobStateBadge job={job} />
            </td>
            <td className="nowrap">{job.owner ?? <span className="muted">—</span>}</td>
            <td title={job.nodes.map((node) => node.name).join(", ")}>{job.nodes.length}</td>
            <td className="nowrap">{job.parts_total ? formatBytes(job.size_bytes) : "—"}</td>
            <td>
              <ProcessingProgress {...job} />
            </td>
            <td>
              <JobActions job={job} onDeleted={onDeleted} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
