import { MutationCache, QueryCache, QueryClient } from "@tanstack/react-query";
import { isNotAuthenticated, meKey } from "./api/auth";
import { ApiError } from "./api/client";

/**
 * No interval polling: the server counts every request from a signed-in browser as activity,
 * so a tab left open must not keep an idle app from shutting down. Views refresh when the
 * window regains focus or on the Refresh button. (An open job page's watch of its job,
 * `useWatchedJob`, says it is one, and the server does not count it.)
 */
export function createQueryClient(): QueryClient {
  const client: QueryClient = new QueryClient({
    defaultOptions: {
      queries: {
        // The server answered: asking again gives the same answer. Network errors may pass.
        retry: (failureCount, error) => !(error instanceof ApiError) && failureCount < 2,
      },
    },
    // A session that expired mid-use sends the person back to the login page.
    queryCache: new QueryCache({ onError: (error) => signOutIfExpired(client, error) }),
    mutationCache: new MutationCache({ onError: (error) => signOutIfExpired(client, error) }),
  });
  return client;
}

function signOutIfExpired(client: QueryClient, error: unknown) {
  if (isNotAuthenticated(error)) client.setQueryData(meKey, null);
}
