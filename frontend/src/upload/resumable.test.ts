// @vitest-environment node
import { describe, expect, it } from "vitest";
import { FakeUploadServer, patterned } from "./fakeUploadServer";
import {
  backoffMs,
  contentRange,
  nextRange,
  UploadCancelled,
  UploadError,
  uploadFile,
} from "./resumable";

const FIELDS = { node: "algo-1", rank: 1, kind: "kineto" as const, filename: "rank-1.json.gz" };
const KIB = 1024;

function recorder() {
  const pauses: number[] = [];
  const progress: number[] = [];
  return {
    pauses,
    progress,
    events: {
      chunkBytes: 4 * KIB,
      sleep: async (ms: number) => void pauses.push(ms),
      onProgress: (sent: number) => void progress.push(sent),
    },
  };
}

async function bytesOf(file: File): Promise<Uint8Array> {
  return new Uint8Array(await file.arrayBuffer());
}

describe("chunk planning", () => {
  it("sends ranges of at most the chunk size from the byte the server has", () => {
    expect(nextRange(0, 10, 4)).toEqual({ start: 0, end: 4 });
    expect(nextRange(8, 10, 4)).toEqual({ start: 8, end: 10 });
    expect(contentRange(8, 10, 10)).toBe("bytes 8-9/10");
    expect([1, 2, 3, 6, 7, 9].map(backoffMs)).toEqual([500, 1000, 2000, 15000, 15000, 15000]);
  });
});

describe("uploadFile", () => {
  it("sends a file in ranges and completes it into a part", async () => {
    const server = new FakeUploadServer();
    const file = patterned(10 * KIB + 5);
    const { events, progress, pauses } = recorder();

    const part = await uploadFile(server.client, 4, file, FIELDS, events);

    expect(part).toMatchObject({ id: 1 });
    expect(server.parts[0]!.bytes).toEqual(await bytesOf(file));
    expect(server.parts[0]!.fields).toEqual({ ...FIELDS, hostname: "", size_bytes: file.size });
    expect(server.log).toEqual([
      "POST /api/jobs/4/uploads/",
      "PUT /api/uploads/u1/ bytes 0-4095/10245",
      "PUT /api/uploads/u1/ bytes 4096-8191/10245",
      "PUT /api/uploads/u1/ bytes 8192-10244/10245",
      "POST /api/uploads/u1/complete/",
    ]);
    expect(progress).toEqual([4096, 8192, 10245]);
    expect(pauses).toEqual([]);
  });

  it("resumes from what the server holds after a range fails, never from the start", async () => {
    const server = new FakeUploadServer();
    const file = patterned(12 * KIB);
    const { events, pauses } = recorder();
    const retries: string[] = [];
    server.fail("PUT upload", "network"); // the first range never arrives
    await uploadFile(server.client, 4, file, FIELDS, {
      ...events,
      onRetry: (attempt, delayMs, error) =>
        void retries.push(`${attempt} ${delayMs} ${error.message}`),
    });
    // The second range arrives but its answer is lost: the client asks and goes on from 8192.
    expect(server.parts[0]!.bytes).toEqual(await bytesOf(file));
    expect(retries).toEqual(["1 500 The server could not be reached (Failed to fetch)."]);
    expect(pauses).toEqual([500]);
    expect(server.log.slice(0, 4)).toEqual([
      "POST /api/jobs/4/uploads/",
      "PUT /api/uploads/u1/ bytes 0-4095/12288",
      "GET /api/uploads/u1/",
      "PUT /api/uploads/u1/ bytes 0-4095/12288",
    ]);
  });

  it("asks where to resume when a range arrived but its answer was lost", async () => {
    const server = new FakeUploadServer();
    const file = patterned(12 * KIB);
    const { events, progress } = recorder();
    server.fail("PUT upload", "lost-response", 503);
    await uploadFile(server.client, 4, file, FIELDS, events);
    expect(server.parts[0]!.bytes).toEqual(await bytesOf(file));
    expect(server.log).toEqual([
      "POST /api/jobs/4/uploads/",
      "PUT /api/uploads/u1/ bytes 0-4095/12288", // stored, answer lost
      "GET /api/uploads/u1/", // 4096 arrived
      "PUT /api/uploads/u1/ bytes 4096-8191/12288", // 503
      "GET /api/uploads/u1/",
      "PUT /api/uploads/u1/ bytes 4096-8191/12288",
      "PUT /api/uploads/u1/ bytes 8192-12287/12288",
      "POST /api/uploads/u1/complete/",
    ]);
    expect(progress).toEqual([4096, 4096, 8192, 12288]);
  });

  it("keeps a completed part when the answer to completing it was lost", async () => {
    const server = new FakeUploadServer();
    server.fail("POST complete", "lost-response");
    const part = await uploadFile(server.client, 4, patterned(100), FIELDS, recorder().events);
    expect(part).toBeNull();
    expect(server.parts).toHaveLength(1);
  });

  it("gives up after as many tries as allowed, saying why", async () => {
    const server = new FakeUploadServer();
    server.fail("PUT upload", 500, 500, 500);
    const { events, pauses } = recorder();
    const failure = uploadFile(server.client, 4, patterned(100), FIELDS, {
      ...events,
      maxAttempts: 3,
    });
    await expect(failure).rejects.toThrow("Upstream trouble. Gave up after 3 tries.");
    expect(pauses).toEqual([500, 1000]);
    expect(server.parts).toHaveLength(0);
  });

  it("waits as long as a busy server asks, however often, without giving up", async () => {
    const server = new FakeUploadServer();
    server.fail("POST start", "busy", "busy", "busy", "busy");
    const { events, pauses } = recorder();
    const file = patterned(100);
    await uploadFile(server.client, 4, file, FIELDS, { ...events, maxAttempts: 3 });
    // Four refusals, more than the three tries a failure gets, each waited for its Retry-After.
    expect(pauses).toEqual([7000, 7000, 7000, 7000]);
    expect(server.parts[0]!.bytes).toEqual(await bytesOf(file));
  });

  it("does not retry what the server refuses for good", async () => {
    const { events, pauses } = recorder();
    const server = new FakeUploadServer();
    server.fetch = async () =>
      new Response(JSON.stringify({ detail: "The file is too large." }), { status: 413 });
    const error = await uploadFile(server.client, 4, patterned(10), FIELDS, events).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UploadError);
    expect((error as UploadError).message).toBe("The file is too large.");
    expect((error as UploadError).status).toBe(413);
    expect(pauses).toEqual([]);
  });

  it("cancels: stops sending and removes the server's upload", async () => {
    const server = new FakeUploadServer();
    const controller = new AbortController();
    let ranges = 0;
    server.onRange = () => {
      ranges += 1;
      if (ranges === 2) controller.abort();
    };
    const file = patterned(20 * KIB);
    const cancelled = uploadFile(server.client, 4, file, FIELDS, {
      ...recorder().events,
      signal: controller.signal,
    });
    await expect(cancelled).rejects.toBeInstanceOf(UploadCancelled);
    expect(server.log.at(-1)).toBe("DELETE /api/uploads/u1/");
    expect(server.uploads.size).toBe(0);
    expect(server.parts).toHaveLength(0);
    expect(server.log.filter((line) => line.startsWith("PUT"))).toHaveLength(2);
  });

  it("sends the CSRF token with every request that changes something", async () => {
    const seen: Record<string, string | undefined> = {};
    const server = new FakeUploadServer();
    const answer = server.fetch;
    server.fetch = (request) => {
      seen[request.method] = request.headers.get("X-CSRFToken") ?? undefined;
      return answer(request);
    };
    await uploadFile(server.client, 4, patterned(10), FIELDS, recorder().events);
    expect(seen).toEqual({ POST: "token", PUT: "token" });
  });
});
