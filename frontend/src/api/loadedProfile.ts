import { type QueryClient, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { fetchMe, meKey } from "./auth";
import { ApiError, api, unwrap } from "./client";
import { useJob } from "./jobs";
import type { LoadedProfile } from "./types";

export const loadedProfileKey = ["loaded-profile"] as const;
// Only this user's own actions change it (they set it here); a load in another tab shows when
// this one regains focus. Fresh for a moment, so the page mounting just after the prefetch
// does not ask again.
const LOADED_FRESH_MS = 5_000;

/** The job this user has loaded, or null: the API answers 204 when none is loaded. */
async function fetchLoadedProfile(): Promise<LoadedProfile | null> {
  const result = await api.GET("/api/loaded-profile/");
  if (result.response.status === 204 || result.response.status === 404) return null;
  return unwrap(result);
}

export function useLoadedProfile() {
  return useQuery({
    queryKey: loadedProfileKey,
    queryFn: fetchLoadedProfile,
    staleTime: LOADED_FRESH_MS,
  });
}

/**
 * Who is signed in, then what they have loaded, asked as the app starts: every page's first
 * data waits on both, and the router would ask only once it has the page's code and the shell
 * has rendered. Nothing is asked of an anonymous visitor (the login page logs no 403).
 */
export async function prefetchSession(client: QueryClient): Promise<void> {
  const me = await client
    .fetchQuery({ queryKey: meKey, queryFn: fetchMe, staleTime: Infinity })
    .catch(() => null);
  if (me)
    await client.prefetchQuery({
      queryKey: loadedProfileKey,
      queryFn: fetchLoadedProfile,
      staleTime: LOADED_FRESH_MS,
    });
}

/**
 * The loaded job with its part counts and size, which only the job resource carries;
 * `job` stays idle while nothing is loaded. The loaded profile carries the job too: the page
 * starts from it while the job resource is asked for afresh.
 */
export function useLoadedJob() {
  const loaded = useLoadedProfile();
  const job = useJob(loaded.data?.job, loaded.data?.job_detail);
  return { loaded, job };
}

export function useLoadProfile() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (jobId: number) =>
      unwrap(await api.PUT("/api/loaded-profile/", { body: { job: jobId } })),
    onSuccess: (loaded) => queryClient.setQueryData(loadedProfileKey, loaded),
    onError: (error) => {
      // Refused because another profile is loaded (maybe from another tab): show that one.
      if (error instanceof ApiError && error.status === 409) {
        void queryClient.invalidateQueries({ queryKey: loadedProfileKey });
      }
    },
  });
}

export function useUnloadProfile() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () => {
      const result = await api.DELETE("/api/loaded-profile/");
      if (!result.response.ok) throw new ApiError(result.response.status, result.error);
    },
    onSuccess: () => queryClient.setQueryData(loadedProfileKey, null),
  });
}

/**
 * Load a job in place of the loaded one: one profile is loaded at a time, so the loaded one is
 * unloaded first (the action names both). `load` and `unload` carry each step's state.
 */
export function useReplaceProfile() {
  const load = useLoadProfile();
  const unload = useUnloadProfile();
  const replace = async (jobId: number, unloadFirst: boolean) => {
    if (unloadFirst) await unload.mutateAsync();
    return load.mutateAsync(jobId);
  };
  return { load, unload, replace };
}
