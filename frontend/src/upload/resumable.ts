/**
 * One file to the server through the resumable ranged-upload API: `POST /api/jobs/{id}/uploads/`,
 * then `PUT /api/uploads/{id}/` with `Content-Range` per chunk, then `POST …/complete/`.
 *
 * A range that fails (the network drops, the server answers 5xx, or it says the range does not
 * continue the file) is retried after a growing pause, from the byte the server says it has:
 * the upload resumes, it never starts again. Aborting the signal cancels it on the server too.
 * Every request goes through the app's generated API client (its CSRF token, DRF's error
 * messages); the client is passed in, so the whole protocol runs in tests without a browser.
 * Progress is what the server holds after each range: a range is one request, and fetch
 * reports no progress within a request body.
 */
import { ApiError, type ApiClient } from "../api/http";
import type { components } from "../api/schema";
import type { PartKind } from "./detect";

export type ServerUpload = components["schemas"]["Upload"];
export type StoredPart = components["schemas"]["ProfilePart"];

export const CHUNK_BYTES = 8 * 1024 * 1024;
export const MAX_ATTEMPTS = 8;

export type PartFields = { node: string; rank: number; kind: PartKind; filename: string };

export type UploadEvents = {
  chunkBytes?: number;
  maxAttempts?: number;
  signal?: AbortSignal;
  /** Bytes the server holds, after each range it accepted. */
  onProgress?: (sentBytes: number) => void;
  /** A request failed and is tried again after `delayMs`. */
  onRetry?: (attempt: number, delayMs: number, error: Error) => void;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
};

/** The API refused, or could not be reached: `retryable` says whether trying again may help;
 * `retryAfterMs`, how long a busy server asked to be left alone (its Retry-After). */
export class UploadError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    readonly retryable: boolean,
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = "UploadError";
  }
}

export class UploadCancelled extends Error {
  constructor() {
    super("Cancelled");
    this.name = "UploadCancelled";
  }
}

/** The next range to send: from the byte the server has, at most `chunkBytes` long. */
export function nextRange(
  received: number,
  size: number,
  chunkBytes: number,
): { start: number; end: number } {
  return { start: received, end: Math.min(size, received + chunkBytes) };
}

/** The Content-Range header of bytes [start, end) of a file of `total` bytes. */
export function contentRange(start: number, end: number, total: number): string {
  return `bytes ${start}-${end - 1}/${total}`;
}

/** The pause before try `attempt` (1-based): 0.5 s, doubling, at most 15 s. */
export function backoffMs(attempt: number): number {
  return Math.min(500 * 2 ** (attempt - 1), 15_000);
}

/**
 * Uploads `file` as one part of the job; resolves with the stored part, or null when the server
 * stored it but its answer was lost (a retried completion finds the upload already gone).
 */
export async function uploadFile(
  client: ApiClient,
  jobId: number,
  file: Blob,
  fields: PartFields,
  events: UploadEvents = {},
): Promise<StoredPart | null> {
  const { signal, onProgress } = events;
  const chunkBytes = events.chunkBytes ?? CHUNK_BYTES;

  checkCancelled(signal);
  const started = await withRetries(events, () =>
    send(signal, () =>
      client.POST("/api/jobs/{id}/uploads/", {
        params: { path: { id: jobId } },
        body: { ...fields, hostname: "", size_bytes: file.size },
        signal,
      }),
    ),
  );
  const path = { params: { path: { id: started.id } }, signal };
  try {
    let received = started.received_bytes;
    let failures = 0;
    let known = true;
    while (!known || received < file.size) {
      try {
        if (!known) {
          // Resume from what the server holds: the failed range may have arrived in full or part.
          received = (await send(signal, () => client.GET("/api/uploads/{id}/", path)))
            .received_bytes;
          known = true;
          onProgress?.(received);
          continue;
        }
        const { start, end } = nextRange(received, file.size, chunkBytes);
        const accepted = await send(signal, () =>
          client.PUT("/api/uploads/{id}/", {
            params: {
              path: { id: started.id },
              header: { "Content-Range": contentRange(start, end, file.size) },
            },
            headers: { "Content-Type": "application/octet-stream" },
            // The schema names the body a string of bytes; the range goes as the Blob it is.
            body: file.slice(start, end) as unknown as string,
            bodySerializer: (range) => range,
            signal,
          }),
        );
        received = accepted.received_bytes;
        failures = 0;
        onProgress?.(received);
      } catch (error) {
        failures += 1;
        await waitToRetry(error, failures, events);
        known = false;
      }
    }
    let tries = 0;
    return await withRetries(events, async () => {
      tries += 1;
      try {
        return await send(signal, () => client.POST("/api/uploads/{id}/complete/", path));
      } catch (error) {
        if (tries > 1 && error instanceof UploadError && error.status === 404) return null;
        throw error;
      }
    });
  } catch (error) {
    if (signal?.aborted) {
      // Best effort: what the server holds of a cancelled file goes (or goes after a day).
      await client
        .DELETE("/api/uploads/{id}/", { params: { path: { id: started.id } } })
        .catch(() => undefined);
      throw new UploadCancelled();
    }
    throw error;
  }
}

async function withRetries<T>(events: UploadEvents, attempt: () => Promise<T>): Promise<T> {
  for (let failures = 1; ; failures += 1) {
    try {
      return await attempt();
    } catch (error) {
      await waitToRetry(error, failures, events);
    }
  }
}

/** Rethrows what retrying cannot mend; otherwise reports the retry and waits for it. */
async function waitToRetry(error: unknown, failures: number, events: UploadEvents): Promise<void> {
  checkCancelled(events.signal);
  const maxAttempts = events.maxAttempts ?? MAX_ATTEMPTS;
  if (!(error instanceof UploadError) || !error.retryable) throw error;
  // A server busy parsing (429 with Retry-After) is waited for as long as it asks, for as long
  // as it stays busy: that is no failure to give up on (the user may cancel).
  const busy = error.status === 429 && error.retryAfterMs !== null;
  if (!busy && failures >= maxAttempts) {
    throw new UploadError(`${error.message} Gave up after ${failures} tries.`, error.status, false);
  }
  const delayMs = busy ? error.retryAfterMs! : backoffMs(failures);
  events.onRetry?.(failures, delayMs, error);
  await (events.sleep ?? pause)(delayMs, events.signal);
  checkCancelled(events.signal);
}

/** Runs one request; an answer that is not a success becomes an UploadError that says whether
 * trying again may help, with DRF's message as the API client reads it. */
async function send<T>(
  signal: AbortSignal | undefined,
  call: () => Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  let result: Awaited<ReturnType<typeof call>>;
  try {
    result = await call();
  } catch (error) {
    checkCancelled(signal);
    const reason = error instanceof Error ? error.message : String(error);
    throw new UploadError(`The server could not be reached (${reason}).`, null, true);
  }
  const { status, ok } = result.response;
  if (!ok) {
    // 409: the range did not continue the file (a retry of a range that did arrive): resync.
    const retryable = status >= 500 || status === 408 || status === 409 || status === 429;
    const message = new ApiError(status, result.error).message;
    throw new UploadError(message, status, retryable, retryAfterMs(result.response));
  }
  return result.data as T;
}

/** A Retry-After of whole seconds, in ms (null when absent or a date). */
function retryAfterMs(response: Response): number | null {
  const seconds = Number(response.headers.get("Retry-After") ?? Number.NaN);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : null;
}

function checkCancelled(signal?: AbortSignal): void {
  if (signal?.aborted) throw new UploadCancelled();
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done);
  });
}
