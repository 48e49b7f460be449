import { vi } from "vitest";
import type { AppSettings, LoadedProfile, TrainingJob, User } from "../api/types";

type Reply = { status: number; body?: unknown };
type Handler = (request: Request, url: URL) => Reply | Promise<Reply>;

/**
 * Stands in for the Django API at the network boundary: tests declare answers per
 * "METHOD /path/" and read back what the app sent.
 */
export class FakeApi {
  readonly requests: { method: string; url: URL; body: unknown; headers: Headers }[] = [];
  private readonly handlers = new Map<string, Handler>();

  constructor() {
    vi.stubGlobal("fetch", (input: Request) => this.handle(input));
  }

  on(route: string, handler: Handler | Reply): this {
    this.handlers.set(route, typeof handler === "function" ? handler : () => handler);
    return this;
  }

  sent(route: string) {
    const [method, path] = route.split(" ");
    return this.requests.filter((r) => r.method === method && r.url.pathname === path);
  }

  private async handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const text = request.method === "GET" ? "" : await request.clone().text();
    this.requests.push({
      method: request.method,
      url,
      body: text ? JSON.parse(text) : undefined,
      headers: request.headers,
    });
    const handler = this.handlers.get(`${request.method} ${url.pathname}`);
    if (!handler) throw new Error(`FakeApi: no answer for ${request.method} ${url.pathname}`);
    const { status, body } = await handler(request, url);
    return new Response(body === undefined ? null : JSON.stringify(body), {
      status,
      headers: { "Content-Type": "application/json" },
    });
  }
}

export const admin: User = { id: 1, username: "admin", is_staff: true };
export const alice: User = { id: 2, username: "alice", is_staff: false };
export const bob: User = { id: 3, username: "bob", is_staff: false };

export function makeJob(
  overrides: Partial<TrainingJob> & { id: number; name: string },
): TrainingJob {
  return {
    created_at: "2025-06-01T10:00:00Z",
    status: "completed",
    end_reason: "",
    instance_type: "ml.p4d.24xlarge",
    instance_count: 2,
    framework: "PyTorch",
    framework_version: "2.13.0",
    hyperparameters: {},
    resource_ids: {},
    owner: "alice",
    started_at: "2025-06-01T10:00:00Z",
    ended_at: "2025-06-01T11:30:00Z",
    nodes: [
      { id: 1, name: "algo-1", hostname: "ip-10-0-0-1", gpu_count: 8, cpu_count: 96 },
      { id: 2, name: "algo-2", hostname: "ip-10-0-0-2", gpu_count: 8, cpu_count: 96 },
    ],
    parts_total: 4,
    parts_done: 4,
    parts_failed: 0,
    size_bytes: 12_500_000,
    state: overrides.status ?? "completed",
    uploads_interrupted: 0,
    interrupted_received_bytes: 0,
    interrupted_size_bytes: 0,
    read_warnings: [],
    default_window: "whole_trace",
    notes: "",
    tags: [],
    ...overrides,
  };
}

export function page<T>(results: T[], count = results.length) {
  return { count, next: null, previous: null, results };
}

export function loadedProfile(job: TrainingJob): LoadedProfile {
  return { job: job.id, job_detail: job, loaded_at: "2025-06-02T09:00:00Z" };
}

export const defaultSettings: AppSettings = {
  auto_shutdown_enabled: true,
  auto_shutdown_hours: 2,
  last_activity_at: "2025-06-02T09:00:00Z",
  retention_raw_days: null,
  retention_jobs_days: null,
};

export const diskUse = {
  where: "data directory",
  raw_bytes: 1_500_000_000,
  stores_bytes: 2_250_000_000,
  uploads_bytes: 0,
  total_bytes: 3_750_000_000,
  free_bytes: 120_000_000_000,
  capacity_bytes: 500_000_000_000,
  cache_bytes: 0,
};
