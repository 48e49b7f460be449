import { useMemo } from "react";
import { Link } from "react-router";
import type { TrainingJob } from "../../api/types";
import { JobStateBadge, PartialBadge } from "../../components/Badges";
import { type DataColumn, Table } from "../../components/DataTable";
import { MissingRanksBadge } from "../../components/MissingRanks";
import { ReadWarningBadge } from "../../components/ReadWarnings";
import { ProcessingProgress } from "../../components/ProcessingProgress";
import { formatBytes, formatDateTime } from "../../lib/format";
import { isPartial } from "../../lib/jobs";
import { jobPath } from "../../lib/jobPath";
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

/** The columns the server sorts by (``ordering``): each column's key is its field. */
const SORTABLE = new Set(["name", "created_at", "status", "size_bytes"]);

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
  const columns = useMemo(
    () => jobColumns({ selectedId, onSelect, loadedId, onTag, onDeleted }),
    [selectedId, onSelect, loadedId, onTag, onDeleted],
  );
  const field = ordering.replace(/^-/, "");
  return (
    <Table
      label="Jobs"
      className="jobs-table"
      rows={jobs}
      columns={columns}
      sort={SORTABLE.has(field) ? { key: field, desc: ordering.startsWith("-") } : null}
      onSort={(key) => onOrdering(nextOrdering(ordering, key))}
      rowKey={(job) => job.id}
      rowClass={(job) => (job.id === selectedId ? "selected" : undefined)}
    />
  );
}

function jobColumns({
  selectedId,
  onSelect,
  loadedId,
  onTag,
  onDeleted,
}: Pick<
  Props,
  "selectedId" | "onSelect" | "loadedId" | "onTag" | "onDeleted"
>): DataColumn<TrainingJob>[] {
  const columns: DataColumn<TrainingJob>[] = [
    {
      key: "select",
      label: "Select",
      hiddenLabel: true,
      className: "col-select",
      cell: (job) => (
        <input
          type="checkbox"
          aria-label={`Select ${job.name}`}
          checked={job.id === selectedId}
          onChange={(event) => onSelect(event.target.checked ? job.id : null)}
        />
      ),
    },
    {
      key: "name",
      label: "Name",
      className: "col-name",
      cell: (job) => <JobName job={job} loaded={job.id === loadedId} onTag={onTag} />,
    },
    {
      key: "created_at",
      label: "Created",
      className: "nowrap",
      cell: (job) => formatDateTime(job.created_at),
    },
    { key: "status", label: "Status", cell: (job) => <JobStateBadge job={job} /> },
    {
      key: "owner",
      label: "Owner",
      className: "nowrap",
      cell: (job) => job.owner ?? <span className="muted">—</span>,
    },
    {
      key: "nodes",
      label: "Nodes",
      value: (job) => job.nodes.length,
      cellTitle: (job) => job.nodes.map((node) => node.name).join(", "),
    },
    {
      key: "size_bytes",
      label: "Size",
      className: "nowrap",
      cell: (job) => (job.parts_total ? formatBytes(job.size_bytes) : "—"),
    },
    { key: "processing", label: "Processing", cell: (job) => <ProcessingProgress {...job} /> },
    {
      key: "actions",
      label: "Actions",
      hiddenLabel: true,
      cell: (job) => <JobActions job={job} onDeleted={onDeleted} />,
    },
  ];
  return columns.map((column) =>
    SORTABLE.has(column.key) ? column : { ...column, unsortable: true },
  );
}

function JobName({
  job,
  loaded,
  onTag,
}: {
  job: TrainingJob;
  loaded: boolean;
  onTag: (tag: string) => void;
}) {
  return (
    <>
      {/* Its own address: opens the job's dashboard without loading it. */}
      <Link
        className="job-name"
        to={jobPath(job.id, "dashboard")}
        title={`Open the dashboard of ${job.name}`}
      >
        {job.name}
      </Link>
      {loaded && <span className="badge badge-loaded">loaded</span>}
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
    </>
  );
}
