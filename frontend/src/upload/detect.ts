/**
 * What a trace file says about itself before it is uploaded: its kind, the rank that wrote it
 * and its host (an XPlane profile, `<host>.xplane.pb`, by its name). The rules are the CLI's (`collector/trace_files.py`): a Kineto trace's rank is
 * its `distributedInfo.rank` (PyTorch writes it before the events), else a number in its name
 * like `rank-3`; files without either take the lowest ranks nobody claimed, in order.
 *
 * Only the head of a file is read (1 MiB once decompressed), streaming: a multi-GB trace is
 * never held in memory.
 */
import { readChunkMeta } from "./chunkMeta";

export const HEAD_BYTES = 1 << 20;

export type PartKind = "kineto" | "collector";
export type RankSource = "distributedInfo" | "chunk" | "file name" | "";

export type Detected = {
  kind: PartKind;
  rank: number | null;
  rankFrom: RankSource;
  worldSize: number | null;
  /** A node name fit for the API (from the trace's host, or the chunk's node); null: unknown. */
  node: string | null;
};

const RANK_IN_NAME = /(?:^|[^a-z])rank[-_]?(\d+)/i;
const DIST_INFO = /"distributedInfo"\s*:\s*/;
const HOST_NAME = /"host_name"\s*:\s*"([^"]*)"/;
const GZIP_MAGIC = [0x1f, 0x8b];
const XPLANE_SUFFIX = ".xplane.pb";
const ZIP_MAGIC = [0x50, 0x4b, 0x03, 0x04];
const NODE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The file's kind, rank, world size and node, as far as its first bytes tell. */
export async function detect(file: Blob, path: string): Promise<Detected> {
  const magic = new Uint8Array(await file.slice(0, 4).arrayBuffer());
  const unknown: Detected = {
    kind: "kineto",
    rank: null,
    rankFrom: "",
    worldSize: null,
    node: null,
  };
  let found = unknown;
  if (path.endsWith(XPLANE_SUFFIX)) {
    // TensorFlow's and JAX's profile: a protobuf named after its host, with no rank inside.
    found = { ...unknown, node: safeNodeName(baseName(path).slice(0, -XPLANE_SUFFIX.length)) };
  } else if (path.endsWith(".pcol") || startsWith(magic, ZIP_MAGIC)) {
    const meta = await readChunkMeta(file);
    found = {
      kind: "collector",
      rank: integer(meta?.rank),
      rankFrom: integer(meta?.rank) === null ? "" : "chunk",
      worldSize: integer(meta?.world_size),
      node: typeof meta?.node === "string" ? safeNodeName(meta.node) : null,
    };
  } else {
    const head = await readHead(file, HEAD_BYTES, startsWith(magic, GZIP_MAGIC));
    // A plain file is cheap to read from its end: some writers put the key after the events.
    const info =
      distributedInfo(head) ??
      (startsWith(magic, GZIP_MAGIC) || file.size <= HEAD_BYTES
        ? null
        : distributedInfo(await file.slice(file.size - HEAD_BYTES).text()));
    const host = HOST_NAME.exec(head)?.[1];
    found = {
      ...unknown,
      rank: integer(info?.rank),
      rankFrom: integer(info?.rank) === null ? "" : "distributedInfo",
      worldSize: integer(info?.world_size),
      node: host ? safeNodeName(host) : null,
    };
  }
  if (found.rank === null) {
    const match = RANK_IN_NAME.exec(baseName(path)) ?? RANK_IN_NAME.exec(path);
    if (match) return { ...found, rank: Number(match[1]), rankFrom: "file name" };
  }
  return found;
}

/**
 * Ranks for files in order: each its own where known, else the lowest ranks nobody claimed
 * (two files of one job cannot both be rank 0 unless they say so).
 */
export function assignRanks(known: (number | null)[]): number[] {
  const taken = new Set(known.filter((rank): rank is number => rank !== null));
  let next = 0;
  return known.map((rank) => {
    if (rank !== null) return rank;
    while (taken.has(next)) next += 1;
    taken.add(next);
    return next;
  });
}

/** The first `maxBytes` of the file as text, decompressed when it is gzip. */
export async function readHead(file: Blob, maxBytes: number, gzip: boolean): Promise<string> {
  if (!gzip) return file.slice(0, maxBytes).text();
  const bytes = await readUpTo(
    file.stream().pipeThrough(new DecompressionStream("gzip")),
    maxBytes,
  );
  return new TextDecoder().decode(bytes);
}

/** Up to `maxBytes` from the stream, then it is cancelled; a corrupt stream yields what came. */
export async function readUpTo(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
): Promise<Uint8Array> {
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  try {
    while (total < maxBytes) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      total += value.length;
    }
  } catch {
    // Not gzip after all, or truncated: the rank comes from elsewhere.
  } finally {
    void reader.cancel().catch(() => undefined);
  }
  const out = new Uint8Array(Math.min(total, maxBytes));
  let offset = 0;
  for (const part of parts) {
    const take = part.subarray(0, out.length - offset);
    out.set(take, offset);
    offset += take.length;
    if (offset === out.length) break;
  }
  return out;
}

/** The object after the first `"distributedInfo":` in the text, when it is complete there. */
export function distributedInfo(text: string): Record<string, unknown> | null {
  const match = DIST_INFO.exec(text);
  if (!match) return null;
  const start = match.index + match[0].length;
  if (text[start] !== "{") return null;
  const end = endOfValue(text, start);
  if (end === null) return null;
  try {
    const value: unknown = JSON.parse(text.slice(start, end));
    return value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** The index just past the object or array opening at `start`; null if the text ends first. */
function endOfValue(text: string, start: number): number | null {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i += 1) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i += 1;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") depth += 1;
    else if (c === "}" || c === "]") {
      depth -= 1;
      if (depth === 0) return i + 1;
    }
  }
  return null;
}

/** A name the API accepts for a node (letters, digits, '.', '_', '-'), as the collector makes. */
export function safeNodeName(name: string): string | null {
  const safe = name
    .replace(/[^A-Za-z0-9._-]+/g, "_")
    .replace(/^[._]+|[._]+$/g, "")
    .slice(0, 128);
  return NODE_NAME.test(safe) ? safe : null;
}

function integer(value: unknown): number | null {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : null;
}

function startsWith(bytes: Uint8Array, magic: number[]): boolean {
  return magic.every((byte, i) => bytes[i] === byte);
}

function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}
