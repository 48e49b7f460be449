import createClient, { type Middleware } from "openapi-fetch";
import type { paths } from "./schema";

const UNSAFE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export function readCookie(name: string): string | null {
  for (const pair of document.cookie.split(";")) {
    const [key, ...rest] = pair.trim().split("=");
    if (key === name) return decodeURIComponent(rest.join("="));
  }
  return null;
}

// Django rotates the CSRF token at login, so the cookie is read on every request, not cached.
const csrf: Middleware = {
  onRequest({ request }) {
    if (UNSAFE_METHODS.has(request.method)) {
      const token = readCookie("csrftoken");
      if (token) request.headers.set("X-CSRFToken", token);
    }
    return request;
  },
};

export const api = createClient<paths>({
  baseUrl: window.location.origin,
  credentials: "same-origin",
  // Looked up per call so tests can stub the global fetch after this module loads.
  fetch: (request) => globalThis.fetch(request),
});
api.use(csrf);

export type FieldErrors = Record<string, string[]>;

/** An error response from the API, carrying DRF's `detail`/`code` and per-field messages. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string | null;
  readonly fieldErrors: FieldErrors;

  constructor(status: number, body: unknown) {
    const { detail, code, fieldErrors } = parseErrorBody(body);
    super(detail ?? `The server answered ${status}.`);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.fieldErrors = fieldErrors;
  }
}

function parseErrorBody(body: unknown): {
  detail: string | null;
  code: string | null;
  fieldErrors: FieldErrors;
} {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return { detail: null, code: null, fieldErrors: {} };
  }
  const record = body as Record<string, unknown>;
  const fieldErrors: FieldErrors = {};
  for (const [key, value] of Object.entries(record)) {
    if (key === "detail" || key === "code") continue;
    if (Array.isArray(value)) fieldErrors[key] = value.map(String);
    else if (typeof value === "string") fieldErrors[key] = [value];
  }
  const detail = asMessage(record.detail) ?? firstFieldMessage(fieldErrors);
  return { detail, code: typeof record.code === "string" ? record.code : null, fieldErrors };
}

function asMessage(value: unknown): string | null {
  if (typeof value === "string") return value;
  if (Array.isArray(value) && typeof value[0] === "string") return value[0];
  return null;
}

function firstFieldMessage(fieldErrors: FieldErrors): string | null {
  const [field, messages] = Object.entries(fieldErrors)[0] ?? [];
  if (!field || !messages?.length) return null;
  return field === "non_field_errors" ? messages[0]! : `${field}: ${messages[0]}`;
}

/** Unwraps an openapi-fetch result: the data on success, an ApiError otherwise. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (!result.response.ok) throw new ApiError(result.response.status, result.error);
  return result.data as T;
}
