import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import type { CreateApiTokenRequest } from "./types";

export const tokensKey = ["tokens"] as const;

/** The signed-in user's own API tokens (never their keys). */
export function useApiTokens() {
  return useQuery({
    queryKey: tokensKey,
    queryFn: async () => unwrap(await api.GET("/api/tokens/")),
  });
}

/** Makes a token; the answer carries its key, which the server never shows again. */
export function useCreateApiToken() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (request: CreateApiTokenRequest) =>
      unwrap(await api.POST("/api/tokens/", { body: request })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: tokensKey }),
  });
}

export function useRevokeApiToken() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (id: number) =>
      unwrap(await api.DELETE("/api/tokens/{id}/", { params: { path: { id } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: tokensKey }),
  });
}
