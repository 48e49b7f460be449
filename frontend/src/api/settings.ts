import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import type { AppSettingsRequest } from "./types";

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
    onSuccess: (saved) => queryClient.setQueryData(settingsKey, saved),
  });
}
