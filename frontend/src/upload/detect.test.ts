// @vitest-environment node
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { readChunkMeta } from "./chunkMeta";
import {
  assignRanks,
  detect,
  distributedInfo,
  HEAD_BYTES,
  readHead,
  readUpTo,
  safeNodeName,
} from "./detect";

const DATA = new URL("../../../tests/data/", import.meta.url);

function dataFile(path: string, name = path.split("/").pop()!): File {
  return new File([readFileSync(new URL(path, DATA))], name);
}

describe("detect", () => {
  it("reads each rank of a two-rank job from its gzip traces", async () => {
    for (const rank of [0, 1]) {
      const found = await detect(
        dataFile(`multirank_sampled/rank-${rank}.json.gz`, "trace.json.gz"),
        "trace.json.gz",
      );
      expect(found).toEqual({
        kind: "kineto",
        rank,
        rankFrom: "distributedInfo",
        worldSize: 128,
        node: null,
      });
    }
  });

  it("reads a distributedInfo with nested process groups, and the trace's host as the node", async () => {
    const cpu = await detect(
      dataFile("cpu_only_rank34.pt.trace.json.gz"),
      "cpu_only_rank34.pt.trace.json.gz",
    );
    expect(cpu).toMatchObject({ rank: 34, rankFrom: "distributedInfo", worldSize: 300 });
    const gpu = await detect(
      dataFile("gpu_training_rank0.pt.trace.json.gz"),
      "gpu_training_rank0.pt.trace.json.gz",
    );
    expect(gpu).toMatchObject({
      rank: 0,
      worldSize: 1,
      node: "twshared39868.02.pnb3.facebook.com",
    });
  });

  it("takes the rank from the name when the trace has none, else leaves it to the order", async () => {
    const named = await detect(dataFile("h100_cnn_kineto.json.gz"), "run/worker_rank3.json.gz");
    expect(named).toMatchObject({ kind: "kineto", rank: 3, rankFrom: "file name" });
    const inFolder = await detect(dataFile("h100_cnn_kineto.json.gz"), "job/rank-12/trace.json.gz");
    expect(inFolder).toMatchObject({ rank: 12, rankFrom: "file name" });
    const unknown = await detect(dataFile("h100_cnn_kineto.json.gz"), "h100_cnn_kineto.json.gz");
    expect(unknown).toMatchObject({ rank: null, rankFrom: "" });
  });

  it("reads a plain trace's distributedInfo written after its events from the file's end", async () => {
    const events = `[${Array.from({ length: 30_000 }, (_, i) => `{"ph":"X","name":"op${i}","ts":${i},"dur":1}`).join(",")}]`;
    const text = `{"traceEvents": ${events}, "distributedInfo": {"rank": 5, "world_size": 8}}`;
    expect(text.length).toBeGreaterThan(HEAD_BYTES);
    const found = await detect(new File([text], "t.json"), "t.json");
    expect(found).toMatchObject({ rank: 5, worldSize: 8, rankFrom: "distributedInfo" });
  });

  it("reads a collector chunk's rank and node from its meta", async () => {
    const real = await detect(dataFile("h100_collector/chunk-000.pcol"), "spool/chunk-000.pcol");
    expect(real).toEqual({
      kind: "collector",
      rank: 0,
      rankFrom: "chunk",
      worldSize: 1,
      node: "vm",
    });
    const stored = storedChunk({
      format: "profiler-app-chunk",
      node: "algo-2",
      rank: 7,
      world_size: 16,
    });
    expect(await readChunkMeta(stored)).toMatchObject({ rank: 7, node: "algo-2" });
    expect(await detect(stored, "chunk-001.pcol")).toMatchObject({
      kind: "collector",
      rank: 7,
      node: "algo-2",
    });
  });

  it("does not mistake a file that is neither for a trace with a rank", async () => {
    expect(await detect(new File(["PK\u0003\u0004 not a zip"], "x.pcol"), "x.pcol")).toMatchObject({
      kind: "collector",
      rank: null,
    });
    const corrupt = new File([new Uint8Array([0x1f, 0x8b, 8, 0, 1, 2, 3])], "x.json.gz");
    expect(await detect(corrupt, "x.json.gz")).toMatchObject({ kind: "kineto", rank: null });
  });

  it("sends an XPlane profile as a trace, its node from the host it is named after", async () => {
    const profile = new File([new Uint8Array([0x0a, 0x10, 0x12, 0x0e])], "node-7.xplane.pb");
    const path = "logs/plugins/profile/2026_11_28_12_52_54/node-7.xplane.pb";
    expect(await detect(profile, path)).toEqual({
      kind: "kineto",
      rank: null,
      rankFrom: "",
      worldSize: null,
      node: "node-7",
    });
    expect(await detect(profile, "rank-2.xplane.pb")).toMatchObject({ rank: 2, node: "rank-2" });
  });
});

describe("reading only the head", () => {
  it("stops pulling from a stream once it has enough", async () => {
    let pulls = 0;
    let cancelled = false;
    const endless = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          pulls += 1;
          controller.enqueue(new Uint8Array(64 * 1024));
        },
        cancel() {
          cancelled = true;
        },
      },
      { highWaterMark: 0 },
    );
    const head = await readUpTo(endless, 1 << 20);
    expect(head.length).toBe(1 << 20);
    expect(pulls).toBe(16);
    await Promise.resolve();
    expect(cancelled).toBe(true);
  });

  it("decompresses no more of a large gzip file than the head", async () => {
    const big = gzipSync(
      new TextEncoder().encode(`{"traceEvents": [${'{"ph":"X"},'.repeat(1_000_000)}{}]}`),
    );
    const head = await readHead(new File([big], "big.json.gz"), HEAD_BYTES, true);
    expect(head.length).toBe(HEAD_BYTES);
    expect(head.startsWith('{"traceEvents": [{"ph":"X"}')).toBe(true);
  });
});

describe("ranks", () => {
  it("gives files without a rank the lowest ranks nobody claimed, in order", () => {
    expect(assignRanks([null, 0, null, 2, null])).toEqual([1, 0, 3, 2, 4]);
    expect(assignRanks([3, 3])).toEqual([3, 3]);
  });

  it("parses distributedInfo only when the object is complete", () => {
    expect(distributedInfo('{"distributedInfo": {"rank": 2, "s": "a}\\"b"}, "x": 1')).toEqual({
      rank: 2,
      s: 'a}"b',
    });
    expect(distributedInfo('{"distributedInfo": {"rank": 2, "pg": [1, 2')).toBeNull();
    expect(distributedInfo('{"distributedInfo": null}')).toBeNull();
  });

  it("makes host names into node names the API accepts", () => {
    expect(safeNodeName("ip-10-0-0-1.ec2.internal")).toBe("ip-10-0-0-1.ec2.internal");
    expect(safeNodeName("my host (gpu)")).toBe("my_host_gpu");
    expect(safeNodeName("...")).toBeNull();
  });
});

/** A chunk zip with its meta stored uncompressed (numpy deflates it; both are read). */
function storedChunk(meta: object): File {
  const json = new TextEncoder().encode(JSON.stringify(meta));
  let header = `{'descr': '|u1', 'fortran_order': False, 'shape': (${json.length},), }`;
  header = header.padEnd(64 - 10 - 1) + "\n";
  const npy = concat([
    new Uint8Array([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]),
    u16(header.length),
    new TextEncoder().encode(header),
    json,
  ]);
  const name = new TextEncoder().encode("meta.npy");
  const local = concat([u32(0x04034b50), u16(20), entryFields(npy, name), name, npy]);
  const central = concat([
    u32(0x02014b50),
    u16(20),
    u16(20),
    entryFields(npy, name),
    u16(0),
    u16(0),
    u16(0),
    u32(0),
    u32(0),
    name,
  ]);
  const end = concat([
    u32(0x06054b50),
    u16(0),
    u16(0),
    u16(1),
    u16(1),
    u32(central.length),
    u32(local.length),
    u16(0),
  ]);
  return new File([concat([local, central, end])], "chunk.pcol");
}

/** The fields a zip's local header and its central directory entry both hold, in this order:
 * flags, method (stored), time, date, CRC (not checked by the reader), both sizes, and the
 * name's and extra field's lengths. */
function entryFields(body: Uint8Array, name: Uint8Array): Uint8Array {
  return concat([
    u16(0),
    u16(0),
    u16(0),
    u16(0),
    u32(0),
    u32(body.length),
    u32(body.length),
    u16(name.length),
    u16(0),
  ]);
}

function u16(value: number): Uint8Array {
  return new Uint8Array([value & 0xff, value >> 8]);
}

function u32(value: number): Uint8Array {
  return new Uint8Array(new Uint32Array([value]).buffer);
}

function concat(parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
