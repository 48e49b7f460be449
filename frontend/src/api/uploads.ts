import { ApiError, api, unwrap } from "./client";
import type { JobStatus } from "./types";

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
