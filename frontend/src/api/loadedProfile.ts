import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { ApiError, api, unwrap } from "./client";
import { useJob } from "./jobs";
import type { LoadedProfile } from "./types";

export const loadedProfileKey = ["loaded-profile"] as const;

/** The job this user has loaded, or null: the API answers 204 when none is loaded. */
export function useLoadedProfile() {
  return useQuery({
    queryKey: loadedProfileKey,
    queryFn: async (): Promise<LoadedProfile | null> => {
      const result = await api.GET("/api/loaded-profile/");
      if (result.response.status === 204 || result.response.status === 404) return null;
      return unwrap(result);
    },
  });
}

/**
 * The loaded job with its part counts and size, which only the job resource carries;
 * `job` stays idle while nothing is loaded.
 */
export function useLoadedJob() {
  const loaded = useLoadedProfile();
  const job = useJob(loaded.data?.job);
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
