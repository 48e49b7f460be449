import { describe, expect, it } from "vitest";
import type { TrackNode } from "../../timeline/model";
import tracks from "../../timeline/testdata/amd_mi250_tracks.json";
import { layoutTracks } from "../../timeline/layout";
import {
  ancestorsOf,
  defaultExpanded,
  rankFilter,
  ranksOf,
  toggleRank,
  trackPath,
  withoutSharedPrefix,
} from "./tree";

const process = (id: string, ranks: number[], children: TrackNode[] = []): TrackNode => ({
  id,
  label: id,
  kind: "process",
  data: null,
  info: { ranks, pid: 1 },
  children,
});
const lane = (id: string): TrackNode => ({
  id,
  label: id,
  kind: "stream",
  data: "events",
  rows: 1,
});
const counter = (id: string): TrackNode => ({ id, label: id, kind: "counter", data: "counter" });
const group = (id: string, kind: string, children: TrackNode[]): TrackNode => ({
  id,
  label: id,
  kind,
  data: null,
  children,
});

const roots: TrackNode[] = [
  group("algo-1", "node", [
    group("algo-1/gpus", "gpus", [
      process(
        "p0",
        [0],
        [
          group("p0/gpu0/device", "device", [lane("p0/s7")]),
          group("p0/cpu", "threads", [lane("p0/t1")]),
        ],
      ),
      process("p1", [1], [group("p1/gpu1/device", "device", [lane("p1/s7")])]),
    ]),
    // After the GPUs here (the rank filter's tests index them first); first in a real tree.
    group("algo-1/cpu", "cpu", [counter("algo-1/cpu/iowait"), counter("algo-1/cpu/faults")]),
  ]),
];

describe("default expansion", () => {
  it("opens nodes and the first process down to its streams; other processes and the node's CPU counters stay collapsed", () => {
    expect([...defaultExpanded(roots)].sort()).toEqual([
      "algo-1",
      "algo-1/gpus",
      "p0",
      "p0/gpu0/device",
    ]);
  });

  it("opens a CPU heading that holds processes: a CPU-only job's events are there", () => {
    const cpuOnly = group("cpu-box", "node", [
      group("cpu-box/cpu", "cpu", [
        lane("cpu-box/cpu/iowait"),
        process("q0", [0], [lane("q0/t1")]),
      ]),
    ]);
    expect([...defaultExpanded([cpuOnly])].sort()).toEqual(["cpu-box", "cpu-box/cpu", "q0"]);
  });

  it("works on a real tree", () => {
    const open = defaultExpanded(tracks.tracks as TrackNode[]);
    expect(open.has("algo-1/597913/gpu2/device")).toBe(true);
    expect(open.has("algo-1/597913/cpu")).toBe(false);
  });
});

describe("rank filter and ancestors", () => {
  it("keeps the processes of the chosen ranks", () => {
    expect(ranksOf(roots)).toEqual([0, 1]);
    const keep = rankFilter([1]);
    expect(keep(roots[0]!.children![0]!.children![0]!)).toBe(false);
    expect(keep(roots[0]!.children![0]!.children![1]!)).toBe(true);
    expect(keep(roots[0]!)).toBe(true);
    expect(rankFilter(null)(roots[0]!.children![0]!.children![0]!)).toBe(true);
  });

  it("toggles a rank's box, back to all shown when all or none are ticked", () => {
    const all = [0, 1, 2];
    expect(toggleRank(null, all, 1)).toEqual([0, 2]);
    expect(toggleRank([2, 0], all, 1)).toBeNull();
    expect(toggleRank([2], all, 0)).toEqual([0, 2]);
    expect(toggleRank([2], all, 2)).toBeNull();
  });

  it("lists the groups to open to reveal a track", () => {
    expect(ancestorsOf(roots, "p1/s7")).toEqual(["algo-1", "algo-1/gpus", "p1", "p1/gpu1/device"]);
    expect(ancestorsOf(roots, "nowhere")).toEqual([]);
  });
});

describe("track paths", () => {
  it("names a track by the labels down to it", () => {
    const layout = layoutTracks(roots, defaultExpanded(roots));
    expect(trackPath(layout, roots, "p0/s7")).toBe(
      "algo-1 › algo-1/gpus › p0 › p0/gpu0/device › p0/s7",
    );
    expect(trackPath(layout, roots, "nowhere")).toBe("nowhere");
  });
});

describe("withoutSharedPrefix", () => {
  it("drops the steps every path shares, never a path's own last step", () => {
    expect(
      withoutSharedPrefix([
        "algo-1 › GPUs › HOST-0 › GPU-0 host › thread 1262",
        "algo-1 › GPUs › HOST-0 › GPU-0 device › stream 7",
      ]),
    ).toEqual(["GPU-0 host › thread 1262", "GPU-0 device › stream 7"]);
    expect(withoutSharedPrefix(["algo-1 › a › x", "algo-2 › a › x"])).toEqual([
      "algo-1 › a › x",
      "algo-2 › a › x",
    ]);
    expect(withoutSharedPrefix(["algo-1 › a › x", "algo-1 › a › x"])).toEqual(["x", "x"]);
    expect(withoutSharedPrefix(["algo-1", "algo-1 › a"])).toEqual(["algo-1", "algo-1 › a"]);
    expect(withoutSharedPrefix([])).toEqual([]);
  });
});
