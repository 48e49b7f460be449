import {
  keepPreviousData,
  useInfiniteQuery,
  useMutation,
  useQuery,
  useQueryClient,
} from "@tanstack/react-query";
import { api, unwrap } from "./client";
import type { components } from "./schema";

type Schemas = components["schemas"];

/** A model or experiment profiled again and again, with its regression settings. */
export type Series = Schemas["Series"];
export type SeriesSettings = Schemas["PatchedSeriesRequest"];
/** One run of a series: its job, figures per step per rank, and verdict. */
export type SeriesRun = Schemas["SeriesRun"];
export type RunVerdict = Schemas["Verdict"];
export type Cause = Schemas["Cause"];
/** One rank's step count, median and p95 step in a run. */
export type RankSteps = Schemas["RankSteps"];

/** What each verdict status reads as, on every page that shows one. */
export const VERDICT_LABELS: Record<string, string> = {
  regression: "Regression",
  no_regression: "No regression",
  unjudged: "Could not judge",
  pending: "Not judged yet",
};

export function verdictLabel(status: string | null | undefined): string {
  return status ? (VERDICT_LABELS[status] ?? status) : "—";
}

export const historyKey = ["history"] as const;

/** Series whose name contains `search` (any case; all when blank), by name, a page at a time. */
export function useSeriesSearch(search: string) {
  return useInfiniteQuery({
    queryKey: [...historyKey, "series-list", search],
    initialPageParam: 1,
    queryFn: async ({ pageParam }) =>
      unwrap(
        await api.GET("/api/series/", {
          params: { query: { page: pageParam, ...(search ? { search } : {}) } },
        }),
      ),
    getNextPageParam: (last, _pages, lastPage) => (last.next ? lastPage + 1 : undefined),
    // The list typed into keeps its options until the next search answers (no flicker per key).
    placeholderData: keepPreviousData,
  });
}

/** One series by its id, wherever it falls in the list (a 404 once its last run went). */
export function useSeries(id: number | null) {
  return useQuery({
    queryKey: [...historyKey, "series", id],
    enabled: id !== null,
    queryFn: async () =>
      unwrap(await api.GET("/api/series/{id}/", { params: { path: { id: id! } } })),
  });
}

export function useSeriesRuns(id: number | null) {
  return useQuery({
    queryKey: [...historyKey, "runs", id],
    enabled: id !== null,
    queryFn: async () =>
      unwrap(await api.GET("/api/series/{id}/runs/", { params: { path: { id: id! } } })),
  });
}

export function useVerdict(jobId: number | null) {
  return useQuery({
    queryKey: [...historyKey, "verdict", jobId],
    enabled: jobId !== null,
    queryFn: async () =>
      unwrap(
        await api.GET("/api/jobs/{job_id}/verdict/", { params: { path: { job_id: jobId! } } }),
      ),
  });
}

/** The owner's (or staff's) change of a series' baseline, thresholds or webhook. */
export function useUpdateSeries(id: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (body: SeriesSettings) =>
      unwrap(await api.PATCH("/api/series/{id}/", { params: { path: { id } }, body })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: historyKey }),
  });
}

/** Moves a job to another series (created if new): its owner or staff. */
export function useSetJobSeries(jobId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (series: string) =>
      unwrap(
        await api.PUT("/api/jobs/{job_id}/series/", {
          params: { path: { job_id: jobId } },
          body: { series },
        }),
      ),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: historyKey }),
  });
}
