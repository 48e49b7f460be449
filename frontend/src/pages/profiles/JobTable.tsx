import type { TrainingJob } from "../../api/types";
import { PartialBadge, StatusBadge } from "../../components/Badges";
import { ReadWarningBadge } from "../../components/ReadWarnings";
import { ProcessingProgress } from "../../components/ProcessingProgress";
import { formatBytes, formatDateTime } from "../../lib/format";
import { isPartial } from "../../lib/jobs";
import { nextOrdering } from "./listQuery";

type Props = {
  jobs: TrainingJob[];
  ordering: string;
  onOrdering: (ordering: string) => void;
  selectedId: number | null;
  onSelect: (id: number | null) => void;
  loadedId: number | null;
};

const SORTABLE = [
  { field: "name", label: "Name" },
  { field: "created_at", label: "Created" },
  { field: "status", label: "Status" },
] as const;

export function JobTable({ jobs, ordering, onOrdering, selectedId, onSelect, loadedId }: Props) {
  const header = (field: string, label: string) => {
    const direction = ordering === field ? "ascending" : ordering === `-${field}` ? "descending" : "none";
    return (
      <th key={field} aria-sort={direction}>
        <button type="button" className="sort-button" onClick={() => onOrdering(nextOrdering(ordering, field))}>
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
          <th className="col-select"><span className="visually-hidden">Select</span></th>
          {SORTABLE.map((column) => header(column.field, column.label))}
          <th>Nodes</th>
          {header("size_bytes", "Size")}
          <th>Processing</th>
        </tr>
      </thead>
      <tbody>
        {jobs.map((job) => (
          <tr key={job.id} className={job.id === selectedId ? "selected" : undefined}>
            <td className="col-select">
              <input type="checkbox" aria-label={`Select ${job.name}`} checked={job.id === selectedId}
                onChange={(event) => onSelect(event.target.checked ? job.id : null)} />
            </td>
            <td className="col-name">
              <span className="job-name">{job.name}</span>
              {job.id === loadedId && <span className="badge badge-loaded">loaded</span>}
              {isPartial(job) && <PartialBadge />}
              <ReadWarningBadge warnings={job.read_warnings} />
            </td>
            <td className="nowrap">{formatDateTime(job.created_at)}</td>
            <td><StatusBadge status={job.status} /></td>
            <td title={job.nodes.map((node) => node.name).join(", ")}>{job.nodes.length}</td>
            <td className="nowrap">{job.parts_total ? formatBytes(job.size_bytes) : "—"}</td>
            <td><ProcessingProgress {...job} /></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
