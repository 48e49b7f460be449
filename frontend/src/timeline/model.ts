/**
 * The timeline's data model: the track tree and decoded viewport payloads, kept in typed
 * arrays. Times are nanoseconds relative to the job's origin (a float64 is exact for 104 days);
 * the origin itself is an integer nanosecond string, converted only at the API edge.
 */

export type TrackKind =
  | "node"
  | "cpu"
  | "gpus"
  | "process"
  | "gpu_util"
  | "device"
  | "stream"
  | "hosts"
  | "host"
  | "threads"
  | "thread"
  | "other"
  | "counter";

export type TrackNode = {
  id: string;
  label: string;
  kind: TrackKind | string;
  /** What the node's own row draws: event rows, a counter, or (null) only a heading. */
  data: "events" | "counter" | null;
  rows?: number;
  /** Events of an event lane, or below a collapsed group. */
  events?: number;
  info?: Record<string, unknown>;
  children?: TrackNode[];
  /** A group too large to send whole: how many children it has (read a page at a time). */
  children_count?: number;
  /** Event lanes below a collapsed group. */
  lanes?: number;
};

export type Step = { name: string; startNs: number; durNs: number };

/** One nesting depth of one part's lane: slices into the payload's event and block columns. */
export type RowSlice = {
  depth: number;
  part: number;
  events: [offset: number, count: number];
  blocks: [offset: number, count: number];
};

export type TrackData =
  | { type: "events"; id: string; rows: RowSlice[] }
  | { type: "counter"; id: string; offset: number }
  | { type: "aggregate"; id: string; offset: number; lanes: number };

export type Events = {
  idx: Uint32Array;
  start: Float64Array;
  dur: Float64Array;
  name: Uint32Array;
  kind: Uint8Array;
};

export type Blocks = {
  start: Float64Array;
  end: Float64Array;
  count: Uint32Array;
  busy: Float64Array;
  name: Uint32Array;
};

export type Flows = {
  count: number;
  total: number;
  lanes: string[];
  part: Uint32Array;
  launch: Uint32Array;
  launchStart: Float64Array;
  launchDur: Float64Array;
  launchLane: Int32Array;
  launchDepth: Uint8Array;
  launchName: Uint32Array;
  run: Uint32Array;
  runStart: Float64Array;
  runDur: Float64Array;
  runLane: Int32Array;
  runDepth: Uint8Array;
  runName: Uint32Array;
};

/** A bucketed window: ``count`` buckets of ``2**k`` ns from ``startNs``. */
export type Grid = { startNs: number; k: number; count: number };

export type ViewportData = {
  /** The window the events and blocks cover, and the finer bucket grid they were cut on. */
  grid: Grid;
  /** The grid of counters and aggregates (buckets at least a pixel wide). */
  strip: Grid;
  names: string[];
  tracks: Map<string, TrackData>;
  events: Events;
  blocks: Blocks;
  counters: { mean: Float32Array; low: Float32Array; high: Float32Array };
  aggregates: { count: Uint32Array; busy: Float32Array };
  flows: Flows;
};

const MAGIC = "TLV1";

type Header = {
  origin_ns: string;
  start_ns: string;
  k: number;
  n_buckets: number;
  strip: { start_ns: string; k: number; n_buckets: number };
  names: string[];
  tracks: (
    | { id: string; type: "events"; rows: RowSlice[] }
    | { id: string; type: "counter"; offset: number }
    | { id: string; type: "aggregate"; offset: number; lanes: number }
  )[];
  flows: { count: number; total: number; lanes: string[] };
  arrays: Record<string, [offset: number, length: number, dtype: string]>;
};

const ARRAY_TYPES = {
  "<u4": Uint32Array,
  "<i4": Int32Array,
  "<f8": Float64Array,
  "<f4": Float32Array,
  u1: Uint8Array,
} as const;

type ArrayType = keyof typeof ARRAY_TYPES;

/** Nanoseconds between two integer-nanosecond strings, as a float. */
export function nsBetween(fromNs: string, toNs: string): number {
  return Number(BigInt(toNs) - BigInt(fromNs));
}

/** An absolute integer-nanosecond string for a time relative to the origin. */
export function absoluteNs(originNs: string, relativeNs: number): string {
  return (BigInt(originNs) + BigInt(Math.round(relativeNs))).toString();
}

/** Wraps the payload's columns in typed arrays (no copies: they share the buffer). */
export function decodeViewport(buffer: ArrayBuffer, originNs: string): ViewportData {
  const bytes = new Uint8Array(buffer);
  const magic = String.fromCharCode(...bytes.subarray(0, 4));
  if (magic !== MAGIC)
    throw new Error("The server answered with something that is not a timeline viewport.");
  const headerLength = new DataView(buffer).getUint32(4, true);
  const header = JSON.parse(
    new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)),
  ) as Header;
  const base = 8 + headerLength;
  const column = <T extends ArrayType>(
    name: string,
    dtype: T,
  ): InstanceType<(typeof ARRAY_TYPES)[T]> => {
    const found = header.arrays[name];
    const Type = ARRAY_TYPES[dtype];
    if (!found) return new Type(0) as InstanceType<(typeof ARRAY_TYPES)[T]>;
    const [offset, length] = found;
    return new Type(buffer, base + offset, length) as InstanceType<(typeof ARRAY_TYPES)[T]>;
  };
  const tracks = new Map<string, TrackData>();
  for (const track of header.tracks) tracks.set(track.id, track);
  return {
    grid: { startNs: nsBetween(originNs, header.start_ns), k: header.k, count: header.n_buckets },
    strip: {
      startNs: nsBetween(originNs, header.strip.start_ns),
      k: header.strip.k,
      count: header.strip.n_buckets,
    },
    names: header.names,
    tracks,
    events: {
      idx: column("ev_idx", "<u4"),
      start: column("ev_start", "<f8"),
      dur: column("ev_dur", "<f8"),
      name: column("ev_name", "<u4"),
      kind: column("ev_kind", "u1"),
    },
    blocks: {
      start: column("bl_start", "<f8"),
      end: column("bl_end", "<f8"),
      count: column("bl_count", "<u4"),
      busy: column("bl_busy", "<f8"),
      name: column("bl_name", "<u4"),
    },
    counters: {
      mean: column("ct_mean", "<f4"),
      low: column("ct_low", "<f4"),
      high: column("ct_high", "<f4"),
    },
    aggregates: { count: column("ag_count", "<u4"), busy: column("ag_busy", "<f4") },
    flows: {
      count: header.flows.count,
      total: header.flows.total,
      lanes: header.flows.lanes,
      part: column("fl_part", "<u4"),
      launch: column("fl_launch", "<u4"),
      launchStart: column("fl_launch_start", "<f8"),
      launchDur: column("fl_launch_dur", "<f8"),
      launchLane: column("fl_launch_lane", "<i4"),
      launchDepth: column("fl_launch_depth", "u1"),
      launchName: column("fl_launch_name", "<u4"),
      run: column("fl_run", "<u4"),
      runStart: column("fl_run_start", "<f8"),
      runDur: column("fl_run_dur", "<f8"),
      runLane: column("fl_run_lane", "<i4"),
      runDepth: column("fl_run_depth", "u1"),
      runName: column("fl_run_name", "<u4"),
    },
  };
}

export function gridBucketNs(grid: Grid): number {
  return 2 ** grid.k;
}

/** Kind codes of the server's event model (profiler_app/traces/model.py). */
export const KIND_NAMES = [
  "cpu_op",
  "user_annotation",
  "gpu_user_annotation",
  "cuda_runtime",
  "cuda_driver",
  "kernel",
  "gpu_memcpy",
  "gpu_memset",
  "cuda_sync",
  "python_function",
  "step",
  "instant",
  "other",
];

export function kindName(code: number): string {
  return KIND_NAMES[code] ?? "other";
}

export function eventId(part: number, idx: number): string {
  return `${part}:${idx}`;
}

/** Visits ``node`` and everything below it, parents first. */
export function walk(
  node: TrackNode,
  visit: (node: TrackNode, parent: TrackNode | null) => void,
  parent: TrackNode | null = null,
) {
  visit(node, parent);
  for (const child of node.children ?? []) walk(child, visit, node);
}
