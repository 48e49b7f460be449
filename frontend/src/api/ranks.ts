import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import { jobsKey } from "./jobs";

/** What arrived of a job: its ranks, the world size its traces say, and the ranks missing. */
export function useJobSummary(jobId: number) {
  return useQuery({
    queryKey: [...jobsKey, "summary", jobId],
    queryFn: async () =>
      unwrap(await api.GET("/api/jobs/{job_id}/summary/", { params: { path: { job_id: jobId } } })),
  });
}
