import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import type { components } from "./schema";
import type { WindowKind } from "./types";

type Schemas = components["schemas"];

/** The cluster page of one job; times are integer nanoseconds, bandwidths GB/s. */
export type Cluster = Schemas["Cluster"];
export type RankRow = Schemas["RankRow"];
export type SlowFinding = Schemas["SlowFinding"];
export type CollectiveRow = Schemas["CollectiveRow"];
export type CollectiveRank = Schemas["CollectiveRank"];
export type DeviceRow = Schemas["DeviceRow"];
export type Comparison = Schemas["Compare"];
export type DiffSection = Schemas["DiffSection"];

/** `step` null: every step averaged. */
export function useCluster(jobId: number, step: number | null) {
  return useQuery({
    queryKey: ["cluster", jobId, step],
    queryFn: async () =>
      unwrap(
        await api.GET("/api/jobs/{job_id}/cluster/", {
          params: { path: { job_id: jobId }, query: step === null ? {} : { step } },
        }),
      ),
    placeholderData: (previous) => previous,
  });
}

/** `window` null: the window the signed-in user views job A in, for both jobs. */
export function useComparison(a: number | null, b: number | null, window: WindowKind | null) {
  return useQuery({
    queryKey: ["compare", a, b, window],
    enabled: a !== null && b !== null,
    queryFn: async () =>
      unwrap(
        await api.GET("/api/compare/", {
          params: { query: { a: a!, b: b!, ...(window ? { window } : {}) } },
        }),
      ),
  });
}
