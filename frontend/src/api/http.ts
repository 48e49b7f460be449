/**
 * The one HTTP client of the app, generated from the OpenAPI schema (openapi-fetch), and the one
 * reading of DRF's error bodies. Nothing here touches the browser's globals, so code that runs
 * outside a page (uploads under test) uses the same client as the pages.
 */
import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { paths } from "./schema";

export type ApiClient = Client<paths>;

const UNSAFE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export type ClientOptions = {
  baseUrl: string;
  fetch: (request: Request) => Promise<Response>;
  /** The CSRF token every request that changes something carries (Django's X-CSRFToken). */
  csrfToken: () => string | null;
};

export function createApiClient({ baseUrl, fetch, csrfToken }: ClientOptions): ApiClient {
  // Django rotates the CSRF token at login, so it is read on every request, not cached.
  const csrf: Middleware = {
    onRequest({ request }) {
      if (UNSAFE_METHODS.has(request.method)) {
        const token = csrfToken();
        if (token) request.headers.set("X-CSRFToken", token);
      }
      return request;
    },
  };
  const client = createClient<paths>({ baseUrl, credentials: "same-origin", fetch });
  client.use(csrf);
  return client;
}

export type FieldErrors = Record<string, string[]>;

/** An error response from the API, carrying DRF's `detail`/`code` and per-field messages. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string | null;
  readonly fieldErrors: FieldErrors;
  /** The answer as sent, for the few that carry more than a message (410's who and when). */
  readonly body: unknown;

  constructor(status: number, body: unknown) {
    const { detail, code, fieldErrors } = parseErrorBody(body);
    super(detail ?? `The server answered ${status}.`);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.fieldErrors = fieldErrors;
    this.body = body;
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
