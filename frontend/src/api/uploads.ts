import type { ApiTransport } from "../upload/resumable";
import { ApiError, api, readCookie, unwrap } from "./client";
import type { JobStatus } from "./types";

/** The browser's side of the ranged-upload API: its session cookie and CSRF token. */
export const browserTransport: ApiTransport = {
  // Looked up per call so tests can stub the global fetch.
  fetch: (url, init) => globalThis.fetch(new URL(url, window.location.origin), init),
  headers: (): Record<string, string> => {
    const token = readCookie("csrftoken");
    return token ? { "X-CSRFToken": token } : {};
  },
};

/** A new job for uploaded traces: In Progress until its files are in. */
export async function createUploadJob(name: string, nodeCount: number) {
  try {
    return unwrap(
      await api.POST("/api/jobs/", {
        body: {
          name,
          status: "in_progress",
          framework: "PyTorch",
          instance_count: Math.max(1, nodeCount),
        },
      }),
    );
  } catch (error) {
    if (
      error instanceof ApiError &&
      error.fieldErrors.name?.some((m) => m.includes("already exists"))
    ) {
      throw new Error(
        `A job named “${name}” already exists: add to it under “Existing job”, or choose another name.`,
      );
    }
    throw error;
  }
}

export async function setJobStatus(id: number, status: JobStatus) {
  return unwrap(await api.PATCH("/api/jobs/{id}/", { params: { path: { id } }, body: { status } }));
}
