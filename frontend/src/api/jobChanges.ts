import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import { jobsKey, tagsKey } from "./jobs";
import { loadedProfileKey } from "./loadedProfile";
import type { JobChanges } from "./types";

/** Rename a job, or edit its notes or tags (its owner or staff). */
export function useUpdateJob() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async ({ id, changes }: { id: number; changes: JobChanges }) =>
      unwrap(await api.PATCH("/api/jobs/{id}/", { params: { path: { id } }, body: changes })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: jobsKey });
      void queryClient.invalidateQueries({ queryKey: tagsKey });
      // The loaded profile's answer names the job.
      void queryClient.invalidateQueries({ queryKey: loadedProfileKey });
    },
  });
}

/** Delete a job with all its data (its owner or staff); whoever had it loaded has it unloaded. */
export function useDeleteJob() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (id: number) => {
      unwrap(await api.DELETE("/api/jobs/{id}/", { params: { path: { id } } }));
    },
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: jobsKey });
      void queryClient.invalidateQueries({ queryKey: tagsKey });
      void queryClient.invalidateQueries({ queryKey: loadedProfileKey });
    },
  });
}
