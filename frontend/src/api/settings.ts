import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import type { AppSettingsRequest, DiskUse, RetentionPreview } from "./types";

export const settingsKey = ["settings"] as const;

export function useAppSettings() {
  return useQuery({
    queryKey: settingsKey,
    queryFn: async () => unwrap(await api.GET("/api/settings/")),
  });
}

export function useUpdateAppSettings() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (changes: AppSettingsRequest) =>
      unwrap(await api.PUT("/api/settings/", { body: changes })),
    onSuccess: (saved) => {
      queryClient.setQueryData(settingsKey, saved);
      void queryClient.invalidateQueries({ queryKey: [...settingsKey, "retention"] });
    },
  });
}

export function useDiskUse() {
  return useQuery({
    queryKey: [...settingsKey, "disk-use"],
    queryFn: async (): Promise<DiskUse> => unwrap(await api.GET("/api/settings/disk-use/")),
  });
}

/** Day counts as typed: "" is off. */
export type RetentionDays = { raw: string; jobs: string };

/** What retention with these day counts would delete now (staff only). */
export function useRetentionPreview(days: RetentionDays, enabled: boolean) {
  return useQuery({
    queryKey: [...settingsKey, "retention", days],
    queryFn: async (): Promise<RetentionPreview> => {
      const result = await api.GET("/api/settings/retention/preview/", {
        params: { query: { retention_raw_days: days.raw, retention_jobs_days: days.jobs } },
      });
      return unwrap(result);
    },
    enabled,
    placeholderData: keepPreviousData,
  });
}
