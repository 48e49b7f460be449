import { useMemo } from "react";
import type { ProfilePart } from "../../api/types";
import { type DataColumn, Table } from "../../components/DataTable";
import { formatBytes } from "../../lib/format";
import { isActive, type UploadRow } from "../../upload/rows";
import { formatSpeed } from "../../upload/speed";

type Props = {
  rows: UploadRow[];
  /** The parts of the job, by id: what became of the uploaded files. */
  parts: Map<number, ProfilePart>;
  onRank: (key: string, rank: string) => void;
  onNode: (key: string, node: string) => void;
  onCancel: (key: string) => void;
  onRemove: (key: string) => void;
};

const RANK_SOURCES: Record<UploadRow["rankFrom"], string> = {
  distributedInfo: "from the trace",
  chunk: "from the chunk",
  "file name": "from the name",
  order: "by order",
  you: "set by you",
  "": "",
};

export function UploadFileTable({ rows, parts, onRank, onNode, onCancel, onRemove }: Props) {
  const columns = useMemo(
    () => uploadColumns({ parts, onRank, onNode, onCancel, onRemove }),
    [parts, onRank, onNode, onCancel, onRemove],
  );
  return (
    <Table
      label="Files to upload"
      className="upload-table"
      rows={rows}
      columns={columns}
      unsorted
      rowKey={(row) => row.key}
      rowAttributes={() => ({ "data-testid": "upload-row" })}
    />
  );
}

function uploadColumns({
  parts,
  onRank,
  onNode,
  onCancel,
  onRemove,
}: Omit<Props, "rows">): DataColumn<UploadRow>[] {
  const locked = (row: UploadRow) => isActive(row) || row.status === "done";
  return [
    {
      key: "path",
      label: "File",
      cell: (row) => (
        <>
          <span className="upload-name">{row.path}</span>
          <span className="muted upload-meta">
            {formatBytes(row.file.size)} ·{" "}
            {row.kind === "collector" ? "collector chunk" : "PyTorch trace"}
          </span>
        </>
      ),
    },
    {
      key: "rank",
      label: "Rank",
      className: "nowrap",
      cell: (row) => (
        <>
          <input
            className="upload-rank"
            inputMode="numeric"
            value={row.rank}
            disabled={locked(row)}
            aria-label={`Rank of ${row.path}`}
            onChange={(e) => onRank(row.key, e.target.value)}
          />
          <span className="muted upload-meta">{RANK_SOURCES[row.rankFrom]}</span>
        </>
      ),
    },
    {
      key: "node",
      label: "Node",
      cell: (row) => (
        <input
          className="upload-node"
          value={row.node}
          disabled={locked(row)}
          aria-label={`Node of ${row.path}`}
          onChange={(e) => onNode(row.key, e.target.value)}
        />
      ),
    },
    {
      key: "progress",
      label: "Progress",
      className: "upload-progress-cell",
      cell: (row) => (
        <RowProgress row={row} part={row.partId === null ? undefined : parts.get(row.partId)} />
      ),
    },
    {
      key: "actions",
      label: "Actions",
      hiddenLabel: true,
      className: "nowrap",
      cell: (row) =>
        isActive(row) ? (
          <button
            type="button"
            className="btn btn-small"
            aria-label={`Cancel ${row.path}`}
            onClick={() => onCancel(row.key)}
          >
            Cancel
          </button>
        ) : row.status !== "done" ? (
          <button
            type="button"
            className="btn btn-small btn-link"
            aria-label={`Remove ${row.path}`}
            onClick={() => onRemove(row.key)}
          >
            Remove
          </button>
        ) : null,
    },
  ];
}

function RowProgress({ row, part }: { row: UploadRow; part: ProfilePart | undefined }) {
  const total = row.file.size;
  const percent = total ? Math.floor((100 * row.sentBytes) / total) : 100;
  switch (row.status) {
    case "ready":
      return <span className="muted">Ready</span>;
    case "queued":
      return <span className="muted">Waiting</span>;
    case "cancelled":
      return <span className="muted">Cancelled</span>;
    case "failed":
      return <span className="text-error">Failed: {row.message}</span>;
    case "done":
      return <ParseState part={part} />;
    default:
      return (
        <div className="upload-progress" data-testid="upload-progress">
          <progress max={total} value={row.sentBytes} aria-label={`Upload of ${row.path}`} />
          <span className="progress-text">
            {formatBytes(row.sentBytes)} of {formatBytes(total)} ({percent}%)
            {row.bytesPerSecond !== null && ` · ${formatSpeed(row.bytesPerSecond)}`}
          </span>
          {row.status === "retrying" && <span className="upload-retry">{row.message}</span>}
        </div>
      );
  }
}

function ParseState({ part }: { part: ProfilePart | undefined }) {
  if (!part) return <span className="text-success">Uploaded</span>;
  if (part.state === "done") return <span className="text-success">Uploaded · parsed</span>;
  if (part.state === "failed")
    return <span className="text-error">Uploaded · parsing failed: {part.error}</span>;
  if (part.state === "processing") {
    return <span>Uploaded · parsing ({Math.round(100 * part.progress)}%)</span>;
  }
  return <span>Uploaded · waiting to be parsed</span>;
}
