import { describe, expect, it } from "vitest";
import { filesFromDrop, keepTraces } from "./files";
import { addRows, finalJobStatus, type UploadRow } from "./rows";

const file = (name: string) => new File(["x"], name);

describe("picked files", () => {
  it("keeps files named one by one, and only traces of folders, sorted with numbers in order", () => {
    const { traces, skipped } = keepTraces([
      { file: file("rank-10.json.gz"), path: "run/rank-10.json.gz" },
      { file: file("README.md"), path: "run/README.md" },
      { file: file("chunk-000.pcol"), path: "run/spool/chunk-000.pcol" },
      { file: file("rank-2.json"), path: "run/rank-2.json" },
      { file: file("odd.trace"), path: "odd.trace" },
    ]);
    expect(traces.map((t) => t.path)).toEqual([
      "odd.trace",
      "run/rank-2.json",
      "run/rank-10.json.gz",
      "run/spool/chunk-000.pcol",
    ]);
    expect(skipped).toBe(1);
  });

  it("takes a JAX profile's xplane.pb from TensorBoard's layout, not its trace-viewer copy", () => {
    const run = "logs/plugins/profile/2026_11_28_12_52_54";
    const { traces, skipped } = keepTraces([
      { file: file("node-7.trace.json.gz"), path: `${run}/node-7.trace.json.gz` },
      { file: file("node-7.xplane.pb"), path: `${run}/node-7.xplane.pb` },
      { file: file("rank-1.pt.trace.json.gz"), path: "logs/rank-1.pt.trace.json.gz" },
    ]);
    expect(traces.map((t) => t.path)).toEqual([
      `${run}/node-7.xplane.pb`,
      "logs/rank-1.pt.trace.json.gz",
    ]);
    expect(skipped).toBe(0); // the copy is not "not a trace": its profile is sent
  });

  it("adds a file once, and gives ranks by order only to files that did not tell theirs", () => {
    const detected = (rank: number | null) => ({
      kind: "kineto" as const,
      rank,
      rankFrom: rank === null ? ("" as const) : ("distributedInfo" as const),
      worldSize: null,
      node: null,
    });
    const a = { file: file("a.json"), path: "a.json" };
    const b = { file: file("b.json"), path: "b.json" };
    let rows = addRows(
      [],
      [
        { picked: a, detected: detected(null) },
        { picked: b, detected: detected(0) },
      ],
    );
    rows = addRows(rows, [
      { picked: a, detected: detected(null) },
      { picked: { file: file("c.json"), path: "c.json" }, detected: detected(null) },
    ]);
    expect(rows.map((r) => [r.path, r.rank, r.rankFrom, r.node])).toEqual([
      ["a.json", "1", "order", "algo-1"],
      ["b.json", "0", "distributedInfo", "algo-1"],
      ["c.json", "2", "order", "algo-1"],
    ]);
  });

  it("completes a job once every file is in, stops it when none is", () => {
    const rows = (...statuses: UploadRow["status"][]) =>
      statuses.map((status) => ({ status }) as UploadRow);
    expect(finalJobStatus(rows("done", "done"))).toBe("completed");
    expect(finalJobStatus(rows("cancelled", "failed"))).toBe("stopped");
    expect(finalJobStatus(rows("done", "failed"))).toBeNull();
  });
});

describe("a drop", () => {
  it("walks dropped folders, reading each batch of entries until an empty one", async () => {
    const fileEntry = (name: string) => ({
      name,
      isDirectory: false,
      file: (ok: (f: File) => void) => ok(file(name)),
    });
    const folder = (name: string, batches: object[][]) => ({
      name,
      isDirectory: true,
      createReader: () => {
        const left = [...batches, []];
        return { readEntries: (ok: (entries: object[]) => void) => ok(left.shift()!) };
      },
    });
    const run = folder("run", [
      [fileEntry("rank-0.json.gz"), folder("spool", [[fileEntry("chunk-000.pcol")]])],
      [fileEntry("rank-1.json.gz")],
    ]);
    const loose = file("notes.json");
    const transfer = {
      items: [
        { kind: "file", webkitGetAsEntry: () => run, getAsFile: () => null },
        { kind: "file", webkitGetAsEntry: () => null, getAsFile: () => loose },
        { kind: "string", webkitGetAsEntry: () => null, getAsFile: () => null },
      ],
      files: [],
    } as unknown as DataTransfer;
    const found = await filesFromDrop(transfer);
    expect(found.map((f) => f.path)).toEqual([
      "run/rank-0.json.gz",
      "run/spool/chunk-000.pcol",
      "run/rank-1.json.gz",
      "notes.json",
    ]);
  });
});
