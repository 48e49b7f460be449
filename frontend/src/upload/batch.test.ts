// @vitest-environment node
import { describe, expect, it } from "vitest";
import { UploadBatch } from "./batch";
import { detect } from "./detect";
import { FakeUploadServer, patterned } from "./fakeUploadServer";
import type { PickedFile } from "./files";

function setUp() {
  const server = new FakeUploadServer();
  const calls: string[] = [];
  let failCreate = false;
  const batch = new UploadBatch({
    client: server.client,
    detect,
    createJob: async (name, nodeCount) => {
      calls.push(`create ${name} ${nodeCount}`);
      if (failCreate) throw new Error(`A job named “${name}” already exists.`);
      return { id: 7, name };
    },
    setJobStatus: async (id, status) => void calls.push(`status ${id} ${status}`),
    uploadEvents: { chunkBytes: 1024, sleep: async () => undefined },
  });
  let changes = 0;
  batch.onJobsChanged(() => (changes += 1));
  return { server, calls, batch, changes: () => changes, failCreate: () => (failCreate = true) };
}

const picked = (path: string, size = 3000): PickedFile => ({
  file: patterned(size, path.split("/").pop()),
  path,
});

describe("UploadBatch", () => {
  it("creates the job, sends one part per file with its rank, then marks the job completed", async () => {
    const { server, calls, batch, changes } = setUp();
    await batch.add([
      picked("traces/rank-1.json"),
      picked("traces/notes.txt"),
      picked("traces/first.json"),
    ]);
    const rows = batch.getSnapshot().rows;
    expect(rows.map((r) => [r.path, r.rank, r.rankFrom])).toEqual([
      ["traces/first.json", "0", "order"],
      ["traces/rank-1.json", "1", "file name"],
    ]);
    expect(batch.getSnapshot().skipped).toBe(1);

    await batch.start({ kind: "new", name: " run-1 " });

    expect(calls).toEqual(["create run-1 1", "status 7 completed"]);
    expect(
      server.parts.map((p) => [p.job, p.fields.rank, p.fields.node, p.fields.filename]),
    ).toEqual([
      [7, 0, "algo-1", "first.json"],
      [7, 1, "algo-1", "rank-1.json"],
    ]);
    const state = batch.getSnapshot();
    expect(state.rows.map((r) => [r.status, r.sentBytes, r.partId])).toEqual([
      ["done", 3000, 1],
      ["done", 3000, 2],
    ]);
    expect(state).toMatchObject({
      running: false,
      error: null,
      job: { id: 7, name: "run-1", created: true },
    });
    expect(changes()).toBeGreaterThanOrEqual(3); // the job, each part
  });

  it("adds to an existing job without changing its status", async () => {
    const { server, calls, batch } = setUp();
    await batch.add([picked("rank-3.json")]);
    batch.setNode(batch.getSnapshot().rows[0]!.key, "algo-2");
    await batch.start({ kind: "existing", id: 4, name: "old" });
    expect(calls).toEqual([]);
    expect(server.parts.map((p) => [p.job, p.fields.rank, p.fields.node])).toEqual([
      [4, 3, "algo-2"],
    ]);
  });

  it("skips a file cancelled while it waits, and sends it on the next press into the same job", async () => {
    const { server, calls, batch } = setUp();
    await batch.add([picked("a/rank-0.json"), picked("a/rank-1.json")]);
    const [, second] = batch.getSnapshot().rows;
    const run = batch.start({ kind: "new", name: "run" });
    batch.cancel(second!.key);
    await run;
    expect(batch.getSnapshot().rows.map((r) => r.status)).toEqual(["done", "cancelled"]);
    expect(calls).toEqual(["create run 1"]); // one file is missing: still In Progress

    await batch.start({ kind: "new", name: "ignored: the batch has its job" });
    expect(server.parts.map((p) => p.fields.rank)).toEqual([0, 1]);
    expect(calls).toEqual(["create run 1", "status 7 completed"]);
  });

  it("marks a job it created Stopped when every file was cancelled", async () => {
    const { server, calls, batch } = setUp();
    await batch.add([picked("rank-0.json")]);
    const run = batch.start({ kind: "new", name: "run" });
    batch.cancelAll();
    await run;
    expect(batch.getSnapshot().rows[0]!.status).toBe("cancelled");
    expect(server.parts).toEqual([]);
    expect(server.uploads.size).toBe(0);
    expect(calls).toEqual(["create run 1", "status 7 stopped"]);
  });

  it("says why it cannot start, and what the server refused", async () => {
    const { batch, failCreate, server } = setUp();
    await batch.start({ kind: "new", name: "run" });
    expect(batch.getSnapshot().error).toBe("Add trace files first.");
    await batch.add([picked("trace.json")]);
    expect(batch.problem({ kind: "new", name: "  " })).toBe("Name the new job.");
    batch.setRank(batch.getSnapshot().rows[0]!.key, "two");
    expect(batch.problem({ kind: "new", name: "run" })).toBe(
      "trace.json: The rank must be a whole number from 0 to 1,000,000.",
    );
    batch.setRank(batch.getSnapshot().rows[0]!.key, "2");
    failCreate();
    await batch.start({ kind: "new", name: "taken" });
    expect(batch.getSnapshot()).toMatchObject({
      error: "A job named “taken” already exists.",
      running: false,
      job: null,
    });
    expect(batch.getSnapshot().rows[0]!.status).toBe("ready");
    expect(server.log).toEqual([]);
  });
});
