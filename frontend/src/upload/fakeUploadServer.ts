/**
 * The server's side of the ranged-upload API (core.views.UploadViewSet) in memory, for tests of
 * the client: it checks ranges as the server does and can be told to fail requests.
 */
import { createApiClient } from "../api/http";

type Stored = {
  id: string;
  job: number;
  fields: Record<string, unknown>;
  size: number;
  bytes: Uint8Array;
  received: number;
};
/** "busy": 429 with Retry-After: 7, as the server answers while it is far behind its parses. */
export type Fault = "network" | "lost-response" | "busy" | 500 | 503;

export class FakeUploadServer {
  readonly uploads = new Map<string, Stored>();
  readonly parts: {
    id: number;
    job: number;
    fields: Record<string, unknown>;
    bytes: Uint8Array;
  }[] = [];
  readonly log: string[] = [];
  /** Faults for the next requests of a route: "POST start", "PUT upload", "GET upload", "POST complete". */
  readonly faults = new Map<string, Fault[]>();
  /** Called before a range's bytes are stored (a test may abort the upload there). */
  onRange: (() => void) | null = null;
  private nextId = 1;

  /** The app's API client, talking to this server; its CSRF token is "token". */
  readonly client = createApiClient({
    baseUrl: "http://server.test",
    fetch: (request) => this.fetch(request),
    csrfToken: () => "token",
  });

  fail(route: string, ...faults: Fault[]) {
    this.faults.set(route, [...(this.faults.get(route) ?? []), ...faults]);
  }

  /** Answers a request as the server would; replace it to answer otherwise. */
  fetch = async (request: Request): Promise<Response> => {
    const { method, signal } = request;
    const url = new URL(request.url).pathname;
    const route = `${method} ${kindOf(url)}`;
    // An aborted fetch sends nothing.
    if (signal.aborted) throw new DOMException("The operation was aborted.", "AbortError");
    const range = request.headers.get("Content-Range");
    this.log.push(`${method} ${url}${range ? ` ${range}` : ""}`);
    const fault = this.faults.get(route)?.shift();
    if (fault === "network") throw new TypeError("Failed to fetch");
    if (typeof fault === "number") return json(fault, { detail: "Upstream trouble." });
    if (fault === "busy") {
      const body = { detail: "The server is busy parsing.", code: "ingest_busy" };
      return json(429, body, { "Retry-After": "7" });
    }
    const response = await this.answer(method, url, request);
    if (signal.aborted) throw new DOMException("The operation was aborted.", "AbortError");
    if (fault === "lost-response") throw new TypeError("network error");
    return response;
  };

  private async answer(method: string, url: string, request: Request): Promise<Response> {
    const start = /^\/api\/jobs\/(\d+)\/uploads\/$/.exec(url);
    if (start && method === "POST") {
      const fields = (await request.json()) as Record<string, unknown>;
      const id = `u${this.nextId++}`;
      const size = Number(fields.size_bytes);
      this.uploads.set(id, {
        id,
        job: Number(start[1]),
        fields,
        size,
        bytes: new Uint8Array(size),
        received: 0,
      });
      return json(201, this.view(id));
    }
    const match = /^\/api\/uploads\/(\w+)\/(complete\/)?$/.exec(url);
    const upload = match && this.uploads.get(match[1]!);
    if (!match || !upload) return json(404, { detail: "Not found." });
    if (match[2]) {
      if (upload.received !== upload.size) return json(409, { detail: "not all bytes arrived" });
      this.uploads.delete(upload.id);
      const part = {
        id: this.parts.length + 1,
        job: upload.job,
        fields: upload.fields,
        bytes: upload.bytes,
      };
      this.parts.push(part);
      return json(202, { id: part.id, state: "pending" });
    }
    if (method === "GET") return json(200, this.view(upload.id));
    if (method === "DELETE") {
      this.uploads.delete(upload.id);
      return new Response(null, { status: 204 });
    }
    const range = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(request.headers.get("Content-Range") ?? "");
    const body = new Uint8Array(await request.arrayBuffer());
    const [first, last] = [Number(range![1]), Number(range![2])];
    if (first !== upload.received)
      return json(409, {
        detail: `expected the range to start at byte ${upload.received}, got ${first}`,
      });
    if (body.length !== last - first + 1)
      return json(400, { detail: "Content-Length must equal the range's length." });
    this.onRange?.();
    upload.bytes.set(body, first);
    upload.received = last + 1;
    return json(200, this.view(upload.id));
  }

  private view(id: string) {
    const upload = this.uploads.get(id)!;
    return { id, job: upload.job, received_bytes: upload.received, size_bytes: upload.size };
  }
}

function kindOf(url: string): string {
  if (url.endsWith("/complete/")) return "complete";
  if (url.endsWith("/uploads/")) return "start";
  return "upload";
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json", ...headers },
  });
}

/** A file of `size` bytes whose bytes are not all alike (a shifted range would show). */
export function patterned(size: number, name = "trace.json.gz"): File {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i += 1) bytes[i] = (i * 31 + (i >> 8)) & 0xff;
  return new File([bytes], name);
}
