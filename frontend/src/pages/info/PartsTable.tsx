import { useState } from "react";
import { useJobParts } from "../../api/jobs";
import type { ProfilePart } from "../../api/types";
import { PartStateBadge } from "../../components/Badges";
import { type DataColumn, Table } from "../../components/DataTable";
import { ErrorAlert, Loading } from "../../components/Feedback";
import { Pagination } from "../../components/Pagination";
import { formatBytes, formatDateTime, formatDuration } from "../../lib/format";
import { parseNs } from "./summary";

const PAGE_SIZE = 50;

const PART_COLUMNS: DataColumn<ProfilePart>[] = [
  { key: "original_name", label: "File", className: "mono" },
  { key: "node", label: "Node" },
  { key: "rank", label: "Rank" },
  { key: "pid", label: "PID", cell: (part) => part.pid ?? "—" },
  {
    key: "kind",
    label: "Kind",
    cell: (part) => (part.kind === "kineto" ? "PyTorch trace" : "Collector"),
  },
  { key: "size_bytes", label: "Size", className: "nowrap", format: formatBytes },
  {
    key: "state",
    label: "State",
    className: "nowrap",
    cell: (part) => (
      <>
        <PartStateBadge state={part.state} />
        {part.state === "processing" && (
          <span className="muted"> {Math.round(part.progress * 100)}%</span>
        )}
      </>
    ),
  },
  {
    key: "parse_ns",
    label: "Parsed in",
    className: "nowrap",
    value: parseNs,
    format: formatDuration,
  },
  {
    key: "created_at",
    label: "Uploaded",
    className: "nowrap",
    cell: (part) => formatDateTime(part.created_at),
  },
  {
    key: "error",
    label: "Error",
    className: "part-error",
    cell: (part) => part.error || <span className="muted">—</span>,
  },
];

export function PartsTable({ jobId }: { jobId: number }) {
  const [page, setPage] = useState(1);
  const parts = useJobParts(jobId, page);
  return (
    <section className="card" aria-labelledby="info-parts">
      <h3 id="info-parts">Parts</h3>
      {parts.isPending && <Loading what="parts" />}
      {parts.isError && <ErrorAlert error={parts.error} />}
      {parts.data?.count === 0 && (
        <p className="muted">No parts have been uploaded for this job yet.</p>
      )}
      {parts.data && parts.data.count > 0 && (
        <>
          <Table
            label="Parts"
            className="parts-table"
            rows={parts.data.results}
            columns={PART_COLUMNS}
            // Sorting one page of many would pass for sorting them all.
            unsorted={parts.data.count > PAGE_SIZE}
            rowKey={(part) => part.id}
          />
          {parts.data.count > PAGE_SIZE && (
            <Pagination
              page={page}
              pageSize={PAGE_SIZE}
              count={parts.data.count}
              onPage={setPage}
            />
          )}
        </>
      )}
    </section>
  );
}
