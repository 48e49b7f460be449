import {
  keepPreviousData,
  type Query,
  useMutation,
  useQuery,
  useQueryClient,
} from "@tanstack/react-query";
import { ApiError, api, unwrap } from "./client";
import type { JobState, Page, TagCount, TrainingJob, WindowKind } from "./types";

export type JobListQuery = {
  search?: string;
  status?: JobState[];
  created_after?: string;
  created_before?: string;
  mine?: boolean;
  tag?: string[];
  ordering?: string;
  page?: number;
};

export const jobsKey = ["jobs"] as const;
export const tagsKey = ["tags"] as const;

type JobPageQuery = Query<Page<TrainingJob>, Error, Page<TrainingJob>, readonly unknown[]>;

export function useJobs(
  query: JobListQuery,
  refetchInterval?: (query: JobPageQuery) => number | false,
) {
  return useQuery({
    queryKey: [...jobsKey, "list", query],
    queryFn: async (): Promise<Page<TrainingJob>> =>
      unwrap(await api.GET("/api/jobs/", { params: { query } })),
    // Paging and filtering keep the old rows on screen until the new page arrives.
    placeholderData: keepPreviousData,
    refetchInterval,
  });
}

/** `seed`: the job as another answer carried it (the loaded profile), shown until this
 * query's own answer arrives. */
export function useJob(id: number | undefined, seed?: TrainingJob) {
  return useQuery({
    queryKey: [...jobsKey, "detail", id],
    queryFn: async () =>
      unwrap(await api.GET("/api/jobs/{id}/", { params: { path: { id: id! } } })),
    enabled: id !== undefined,
    placeholderData: seed?.id === id ? seed : undefined,
  });
}

/** How often an open page of a job asks whether it still stands (deleted, failed since). */
const WATCH_MS = 5_000;

/**
 * The job a page shows, asked again every few seconds while the page is open and visible, so
 * a teammate's deletion or a failed parse shows within seconds. The watch is marked as such:
 * the server does not count it as a person's activity (idle auto-shutdown). It stops once the
 * server answered an error (deleted, not found). Shares `useJob`'s cache.
 */
export function useWatchedJob(id: number | undefined, seed?: TrainingJob) {
  return useQuery({
    queryKey: [...jobsKey, "detail", id],
    queryFn: async () =>
      unwrap(
        await api.GET("/api/jobs/{id}/", {
          params: { path: { id: id! } },
          headers: { "X-Profiler-Client": "watch" },
        }),
      ),
    enabled: id !== undefined,
    placeholderData: seed?.id === id ? seed : undefined,
    refetchInterval: (query) => (query.state.error instanceof ApiError ? false : WATCH_MS),
  });
}

export function useJobParts(id: number | undefined, page: number) {
  return useQuery({
    queryKey: [...jobsKey, "parts", id, page],
    queryFn: async () =>
      unwrap(
        await api.GET("/api/jobs/{id}/parts/", {
          params: { path: { id: id! }, query: { page } },
        }),
      ),
    enabled: id !== undefined,
    placeholderData: keepPreviousData,
  });
}

/** Switch the window every page of the job covers for the signed-in user (the owner's switch
 * is also the default of teammates who have not chosen); every cached result of it is stale. */
export function useSetJobWindow(jobId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (window: WindowKind) =>
      unwrap(
        await api.PATCH("/api/jobs/{id}/", { params: { path: { id: jobId } }, body: { window } }),
      ),
    onSuccess: () => void queryClient.invalidateQueries(),
  });
}

/** Ends a job's stopped uploads: `finish` keeps those whose every byte arrived, `abandon`
 * deletes what arrived of them. */
export function useEndUploads(jobId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (how: "finish" | "abandon") => {
      const options = { params: { path: { id: jobId } } };
      return unwrap(
        how === "finish"
          ? await api.POST("/api/jobs/{id}/uploads/finish/", options)
          : await api.POST("/api/jobs/{id}/uploads/abandon/", options),
      );
    },
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: jobsKey }),
  });
}

/** The tags jobs carry, most used first (the tag filter's choices). */
export function useTags() {
  return useQuery({
    queryKey: tagsKey,
    queryFn: async (): Promise<TagCount[]> => unwrap(await api.GET("/api/tags/")),
  });
}
