import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { ApiError, api, unwrap } from "./client";
import type { components } from "./schema";
import type { User } from "./types";

export const meKey = ["me"] as const;

export function isNotAuthenticated(error: unknown): boolean {
  // DRF answers 403 rather than 401 when session auth is the first authentication class.
  return (
    error instanceof ApiError &&
    (error.status === 401 || (error.status === 403 && error.code === "not_authenticated"))
  );
}

/** The signed-in user, or null when anonymous. Also makes Django set the csrftoken cookie. */
export async function fetchMe(): Promise<User | null> {
  try {
    return unwrap(await api.GET("/api/auth/me/"));
  } catch (error) {
    if (isNotAuthenticated(error)) return null;
    throw error;
  }
}

export function useMe() {
  return useQuery({ queryKey: meKey, queryFn: fetchMe, staleTime: Infinity });
}

export function useLogin() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (credentials: { username: string; password: string }) =>
      unwrap(await api.POST("/api/auth/login/", { body: credentials })),
    onSuccess: (user) => {
      // Everything cached belonged to whoever was signed in before (e.g. their loaded profile).
      queryClient.clear();
      queryClient.setQueryData(meKey, user);
    },
  });
}

export function useLogout() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () => {
      const result = await api.POST("/api/auth/logout/");
      if (!result.response.ok) throw new ApiError(result.response.status, result.error);
    },
    onSuccess: () => {
      // Signed out: the pages asking who is signed in hear it (and send their reader to sign
      // in); everything else cached was theirs and goes.
      queryClient.setQueryData(meKey, null);
      queryClient.removeQueries({ predicate: (query) => query.queryKey[0] !== meKey[0] });
    },
  });
}

export type SignInOptions = components["schemas"]["SignInOptions"];

/** How this server lets people sign in: the team's identity provider when one is set up. */
export function useSignInOptions() {
  return useQuery({
    queryKey: ["sign-in-options"],
    queryFn: async (): Promise<SignInOptions> => unwrap(await api.GET("/api/auth/options/")),
    staleTime: Infinity,
  });
}
