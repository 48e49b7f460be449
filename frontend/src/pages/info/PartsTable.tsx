import { useState } from "react";
import { useJobParts } from "../../api/jobs";
import { PartStateBadge } from "../../components/Badges";
import { ErrorAlert, Loading } from "../../components/Feedback";
import { Pagination } from "../../components/Pagination";
import { formatBytes, formatDateTime } from "../../lib/format";

const PAGE_SIZE = 50;

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
          <div className="table-wrap">
            <table className="table parts-table">
              <thead>
                <tr>
                  <th>File</th>
                  <th>Node</th>
                  <th>Rank</th>
                  <th>PID</th>
                  <th>Kind</th>
                  <th>Size</th>
                  <th>State</th>
                  <th>Uploaded</th>
                  <th>Error</th>
                </tr>
              </thead>
              <tbody>
                {parts.data.results.map((part) => (
                  <tr key={part.id}>
                    <td className="mono">{part.original_name}</td>
                    <td>{part.node}</td>
                    <td>{part.rank}</td>
                    <td>{part.pid ?? "—"}</td>
                    <td>{part.kind === "kineto" ? "PyTorch trace" : "Collector"}</td>
                    <td className="nowrap">{formatBytes(part.size_bytes)}</td>
                    <td className="nowrap">
                      <PartStateBadge state={part.state} />
                      {part.state === "processing" && (
                        <span className="muted"> {Math.round(part.progress * 100)}%</span>
                      )}
                    </td>
                    <td className="nowrap">{formatDateTime(part.created_at)}</td>
                    <td className="part-error">{part.error || <span className="muted">—</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
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
