/**
 * A batch of files going to one job, one part per file, one file at a time. It lives outside
 * React (a store the page subscribes to), so uploads go on while the user opens other pages.
 */
import type { Detected } from "./detect";
import { keepTraces, type PickedFile } from "./files";
import type { ApiClient } from "../api/http";
import { UploadCancelled, type UploadEvents, uploadFile } from "./resumable";
import {
  addRows,
  finalJobStatus,
  isActive,
  parseRank,
  patchRow,
  type RowStatus,
  rowProblem,
  sendable,
  type UploadRow,
} from "./rows";
import { SpeedMeter } from "./speed";

export type BatchJob = { id: number; name: string; created: boolean };
export type Target = { kind: "new"; name: string } | { kind: "existing"; id: number; name: string };

export type BatchState = {
  rows: UploadRow[];
  /** Files whose heads are being read for their rank. */
  reading: number;
  /** Files of dropped folders that are not traces. */
  skipped: number;
  running: boolean;
  /** The job this batch sends to, once it has started. */
  job: BatchJob | null;
  error: string | null;
};

export type BatchDeps = {
  /** The API client the files go through (the app's, or a test server's). */
  client: ApiClient;
  createJob: (name: string, nodeCount: number) => Promise<{ id: number; name: string }>;
  setJobStatus: (id: number, status: "completed" | "stopped") => Promise<unknown>;
  detect: (file: File, path: string) => Promise<Detected>;
  now?: () => number;
  /** Options of each file's upload (tests shorten the pauses). */
  uploadEvents?: Pick<UploadEvents, "chunkBytes" | "maxAttempts" | "sleep">;
};

const EMPTY: BatchState = {
  rows: [],
  reading: 0,
  skipped: 0,
  running: false,
  job: null,
  error: null,
};
const READ_AT_ONCE = 4;

export class UploadBatch {
  private state = EMPTY;
  private readonly listeners = new Set<() => void>();
  private readonly jobListeners = new Set<() => void>();
  private readonly controllers = new Map<string, AbortController>();
  private readonly cancelled = new Set<string>();

  constructor(private readonly deps: BatchDeps) {}

  subscribe = (listener: () => void) => {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  };

  getSnapshot = () => this.state;

  /** Called whenever the server's jobs changed because of this batch (a job, a part). */
  onJobsChanged(listener: () => void) {
    this.jobListeners.add(listener);
    return () => void this.jobListeners.delete(listener);
  }

  async add(picked: PickedFile[]): Promise<void> {
    const { traces, skipped } = keepTraces(picked);
    this.set({ skipped, reading: this.state.reading + traces.length });
    const found = await mapLimit(traces, READ_AT_ONCE, async (item) => ({
      picked: item,
      detected: await this.deps.detect(item.file, item.path).catch((): Detected => ({
        kind: "kineto",
        rank: null,
        rankFrom: "",
        worldSize: null,
        node: null,
      })),
    }));
    this.set({
      rows: addRows(this.state.rows, found),
      reading: this.state.reading - traces.length,
    });
  }

  setRank(key: string, rank: string) {
    this.set({ rows: patchRow(this.state.rows, key, { rank, rankFrom: "you" }) });
  }

  setNode(key: string, node: string) {
    this.set({ rows: patchRow(this.state.rows, key, { node: node.trim() }) });
  }

  remove(key: string) {
    this.set({ rows: this.state.rows.filter((row) => row.key !== key || isActive(row)) });
  }

  /** Forgets the files and the job, for another batch. */
  reset() {
    if (!this.state.running) this.set(EMPTY);
  }

  cancel(key: string) {
    this.cancelled.add(key);
    this.controllers.get(key)?.abort();
    const row = this.state.rows.find((r) => r.key === key);
    if (row?.status === "queued") this.patch(key, { status: "cancelled", message: null });
  }

  cancelAll() {
    for (const row of this.state.rows) if (isActive(row)) this.cancel(row.key);
  }

  /** Why the batch cannot start, or null. */
  problem(target: Target): string | null {
    const todo = this.state.rows.filter(sendable);
    if (todo.length === 0) return "Add trace files first.";
    if (target.kind === "new" && !target.name.trim()) return "Name the new job.";
    const bad = todo.find((row) => rowProblem(row) !== null);
    return bad ? `${bad.file.name}: ${rowProblem(bad)}` : null;
  }

  async start(target: Target): Promise<void> {
    const problem = this.problem(target);
    if (this.state.running || problem) {
      this.set({ error: problem });
      return;
    }
    const todo = this.state.rows.filter(sendable);
    this.cancelled.clear();
    this.set({
      running: true,
      error: null,
      rows: this.state.rows.map((row) =>
        sendable(row)
          ? { ...row, status: "queued", message: null, sentBytes: 0, bytesPerSecond: null }
          : row,
      ),
    });
    const outcomes = new Map<string, RowStatus>(
      this.state.rows.map((row) => [row.key, row.status]),
    );
    let job = this.state.job;
    try {
      if (job === null) {
        job =
          target.kind === "new"
            ? {
                ...(await this.deps.createJob(
                  target.name.trim(),
                  new Set(todo.map((row) => row.node)).size,
                )),
                created: true,
              }
            : { id: target.id, name: target.name, created: false };
        this.set({ job });
        this.jobsChanged();
      }
      for (const row of todo) outcomes.set(row.key, await this.send(job.id, row));
      if (job.created) {
        const status = finalJobStatus(
          this.state.rows.map((row) => ({ ...row, status: outcomes.get(row.key)! })),
        );
        if (status) await this.deps.setJobStatus(job.id, status);
      }
    } catch (error) {
      this.set({
        error: error instanceof Error ? error.message : String(error),
        rows: this.state.rows.map((row) =>
          row.status === "queued" ? { ...row, status: "ready" } : row,
        ),
      });
    } finally {
      this.set({ running: false });
      this.jobsChanged();
    }
  }

  private async send(jobId: number, row: UploadRow): Promise<RowStatus> {
    if (this.cancelled.has(row.key)) {
      this.patch(row.key, { status: "cancelled" });
      return "cancelled";
    }
    const controller = new AbortController();
    this.controllers.set(row.key, controller);
    const now = this.deps.now ?? (() => performance.now());
    const meter = new SpeedMeter();
    meter.add(now(), 0);
    this.patch(row.key, { status: "uploading" });
    try {
      const fields = {
        node: row.node,
        rank: parseRank(row.rank)!,
        kind: row.kind,
        filename: row.file.name,
      };
      const part = await uploadFile(this.deps.client, jobId, row.file, fields, {
        ...this.deps.uploadEvents,
        signal: controller.signal,
        onProgress: (sentBytes) => {
          meter.add(now(), sentBytes);
          this.patch(row.key, {
            status: "uploading",
            sentBytes,
            bytesPerSecond: meter.rate(),
            message: null,
          });
        },
        onRetry: (attempt, delayMs, error) =>
          this.patch(row.key, {
            status: "retrying",
            message: `${error.message} Resuming in ${Math.round(delayMs / 100) / 10} s (retry ${attempt}).`,
          }),
      });
      this.patch(row.key, {
        status: "done",
        sentBytes: row.file.size,
        partId: part?.id ?? null,
        message: null,
      });
      return "done";
    } catch (error) {
      const cancelled = error instanceof UploadCancelled;
      this.patch(row.key, {
        status: cancelled ? "cancelled" : "failed",
        message: cancelled ? null : error instanceof Error ? error.message : String(error),
        bytesPerSecond: null,
      });
      return cancelled ? "cancelled" : "failed";
    } finally {
      this.controllers.delete(row.key);
      this.jobsChanged();
    }
  }

  private patch(key: string, changes: Partial<UploadRow>) {
    this.set({ rows: patchRow(this.state.rows, key, changes) });
  }

  private set(changes: Partial<BatchState>) {
    this.state = { ...this.state, ...changes };
    for (const listener of this.listeners) listener();
  }

  private jobsChanged() {
    for (const listener of this.jobListeners) listener();
  }
}

async function mapLimit<T, R>(
  items: T[],
  limit: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
