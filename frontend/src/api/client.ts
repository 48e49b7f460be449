import { createApiClient } from "./http";

export { ApiError, type ApiClient, type FieldErrors, unwrap } from "./http";

export function readCookie(name: string): string | null {
  for (const pair of document.cookie.split(";")) {
    const [key, ...rest] = pair.trim().split("=");
    if (key === name) return decodeURIComponent(rest.join("="));
  }
  return null;
}

/** The app's client: same origin, the session cookie and its CSRF token. */
export const api = createApiClient({
  baseUrl: window.location.origin,
  // Looked up per call so tests can stub the global fetch after this module loads.
  fetch: (request) => globalThis.fetch(request),
  csrfToken: () => readCookie("csrftoken"),
});
