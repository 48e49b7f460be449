/** The files of an upload, one row each, and how their ranks, states and progress change. */
import { assignRanks, type Detected, type PartKind, type RankSource } from "./detect";
import type { PickedFile } from "./files";

export const DEFAULT_NODE = "algo-1";
export const MAX_RANK = 1_000_000;
const NODE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export type RowStatus =
  "ready" | "queued" | "uploading" | "retrying" | "done" | "failed" | "cancelled";

export type UploadRow = {
  key: string;
  file: File;
  path: string;
  kind: PartKind;
  /** The rank as typed (a string while it is edited); ranks the file did not tell are assigned. */
  rank: string;
  rankFrom: RankSource | "order" | "you";
  node: string;
  status: RowStatus;
  sentBytes: number;
  bytesPerSecond: number | null;
  message: string | null;
  partId: number | null;
};

/** New rows for detected files, after the rows there are; unknown ranks take free ones in order. */
export function addRows(
  rows: UploadRow[],
  found: { picked: PickedFile; detected: Detected }[],
): UploadRow[] {
  const keys = new Set(rows.map((row) => row.key));
  const fresh = found
    .filter(({ picked }) => !keys.has(rowKey(picked)))
    .map(({ picked, detected }): UploadRow => ({
      key: rowKey(picked),
      file: picked.file,
      path: picked.path,
      kind: detected.kind,
      rank: detected.rank === null ? "" : String(detected.rank),
      rankFrom: detected.rank === null ? "order" : detected.rankFrom,
      node: detected.node ?? DEFAULT_NODE,
      status: "ready",
      sentBytes: 0,
      bytesPerSecond: null,
      message: null,
      partId: null,
    }));
  const all = [...rows, ...fresh];
  const known = all.map((row) => (row.rankFrom === "order" ? null : parseRank(row.rank)));
  const ranks = assignRanks(known);
  return all.map((row, i) => (row.rankFrom === "order" ? { ...row, rank: String(ranks[i]) } : row));
}

function rowKey(picked: PickedFile): string {
  return `${picked.path}\u0000${picked.file.size}\u0000${picked.file.lastModified}`;
}

export function parseRank(text: string): number | null {
  if (!/^\d+$/.test(text.trim())) return null;
  const rank = Number(text);
  return rank <= MAX_RANK ? rank : null;
}

/** Why a row cannot be sent as it is, or null. */
export function rowProblem(row: UploadRow): string | null {
  if (parseRank(row.rank) === null)
    return `The rank must be a whole number from 0 to ${MAX_RANK.toLocaleString("en-US")}.`;
  if (!NODE_NAME.test(row.node)) return "Node names use letters, digits, '.', '_' and '-'.";
  return null;
}

/** Rows the next press of Upload sends: new ones, and those that failed or were cancelled. */
export function sendable(row: UploadRow): boolean {
  return row.status === "ready" || row.status === "failed" || row.status === "cancelled";
}

export function isActive(row: UploadRow): boolean {
  return row.status === "queued" || row.status === "uploading" || row.status === "retrying";
}

export function patchRow(rows: UploadRow[], key: string, changes: Partial<UploadRow>): UploadRow[] {
  return rows.map((row) => (row.key === key ? { ...row, ...changes } : row));
}

/** What a finished batch makes of a job it created: Completed once every file is in. */
export function finalJobStatus(rows: UploadRow[]): "completed" | "stopped" | null {
  if (rows.every((row) => row.status === "done")) return "completed";
  if (rows.every((row) => row.status !== "done")) return "stopped";
  return null; // some are missing: the job stays In Progress until they are sent again
}
