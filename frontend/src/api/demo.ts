import { useMutation, useQuery } from "@tanstack/react-query";
import { api, unwrap } from "./client";

export const demoKey = ["demo"] as const;

/** Whether this server can run the example training script to make a demo job. */
export function useDemoAvailability(enabled: boolean) {
  return useQuery({
    queryKey: demoKey,
    queryFn: async () => unwrap(await api.GET("/api/demo/")),
    enabled,
  });
}

export function useStartDemo() {
  return useMutation({
    mutationFn: async () => unwrap(await api.POST("/api/demo/")),
  });
}
