import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import { jobsKey } from "./jobs";
import type { components } from "./schema";

type Schemas = components["schemas"];

/** What profiling cost a job's training and what it captured, as its collector reported it. */
export type JobCapture = Schemas["JobCapture"];
export type ProcessCapture = Schemas["ProcessCapture"];
export type CaptureWindow = Schemas["CaptureWindow"];
export type CaptureWindowKind = Schemas["CaptureWindowKindEnum"];

export function useJobCapture(jobId: number) {
  return useQuery({
    queryKey: [...jobsKey, "capture", jobId],
    queryFn: async () =>
      unwrap(await api.GET("/api/jobs/{job_id}/capture/", { params: { path: { job_id: jobId } } })),
  });
}
