import { describe, expect, it } from "vitest";
import {
  AGGREGATE_PX,
  COUNTER_PX,
  HEADING_PX,
  LANE_ROW_PX,
  depthCentre,
  hitTest,
  layoutTracks,
  requestedIds,
  rowAt,
  visibleRows,
} from "./layout";
import type { TrackNode } from "./model";
import { sampleData, sampleTracks as tracks } from "./testdata/fixture";

const roots = tracks.tracks as TrackNode[];
const everything = new Set<string>();
const collectGroups = (node: TrackNode) => {
  if (node.children?.length) everything.add(node.id);
  node.children?.forEach(collectGroups);
};
roots.forEach(collectGroups);

describe("layoutTracks", () => {
  it("stacks rows with their heights: lanes by nesting depth, counters, headings", () => {
    const layout = layoutTracks(roots, everything);
    const rows = layout.rows.map((r) => [r.node.label, r.kind, r.height, r.level]);
    expect(rows.slice(0, 6)).toEqual([
      ["algo-1", "heading", HEADING_PX, 0],
      ["GPUs", "counter", COUNTER_PX, 1],
      ["HOST-0 PID-597913", "heading", HEADING_PX, 2],
      ["GPU-2 utilisation", "counter", COUNTER_PX, 3],
      ["GPU-2 device", "heading", HEADING_PX, 3],
      ["stream 0", "events", 2 * LANE_ROW_PX + 4, 4],
    ]);
    let y = 0;
    for (const row of layout.rows) {
      expect(row.y).toBe(y);
      y += row.height;
    }
    expect(layout.height).toBe(y);
  });

  it("draws a collapsed group as one aggregate row standing for everything below it", () => {
    const open = new Set(everything);
    open.delete("algo-1/597913");
    const layout = layoutTracks(roots, open);
    const proc = layout.byId.get("algo-1/597913")!;
    expect(proc.kind).toBe("aggregate");
    expect(proc.height).toBe(AGGREGATE_PX);
    expect(layout.byId.has("algo-1/597913/gpu2/s0")).toBe(false);
    expect(layout.shownAs.get("algo-1/597913/gpu2/s0")).toBe(proc);
    expect(requestedIds(layout.rows)).toEqual(["algo-1/gpus", "algo-1/597913"]);
  });

  it("filters processes out and finds rows by position", () => {
    const layout = layoutTracks(roots, everything, (node) => node.kind !== "process");
    expect(layout.rows.map((r) => r.node.label)).toEqual(["algo-1", "GPUs"]);
    const full = layoutTracks(roots, everything);
    const stream = full.byId.get("algo-1/597913/gpu2/s0")!;
    expect(rowAt(full, stream.y + 1)).toBe(stream);
    expect(depthCentre(stream, 1)).toBe(stream.y + 2 + LANE_ROW_PX * 1.5);
    expect(visibleRows(full, stream.y, 1)).toEqual([stream]);
  });
});

describe("hitTest", () => {
  const data = sampleData();
  const layout = layoutTracks(roots, everything);
  const view = {
    startNs: data.grid.startNs,
    endNs: data.grid.startNs + data.grid.count * 2 ** data.grid.k,
  };
  const width = data.grid.count;

  it("finds the event under the pointer", () => {
    const stream = data.tracks.get("algo-1/597913/gpu2/s0");
    if (stream?.type !== "events") throw new Error("no stream");
    const slice = stream.rows.find((r) => r.events[1] > 0)!;
    const i = slice.events[0];
    const row = layout.byId.get("algo-1/597913/gpu2/s0")!;
    const x =
      ((data.events.start[i]! + data.events.dur[i]! / 2 - view.startNs) /
        (view.endNs - view.startNs)) *
      width;
    const hit = hitTest(layout, data, view, width, x, depthCentre(row, slice.depth));
    expect(hit).toMatchObject({
      type: "event",
      idx: data.events.idx[i],
      part: 7,
      depth: slice.depth,
    });
  });

  it("reads a counter bucket and misses empty space", () => {
    const util = layout.byId.get("algo-1/597913/gpu2/util")!;
    const hits = Array.from({ length: width }, (_, x) =>
      hitTest(layout, data, view, width, x + 0.5, util.y + 5),
    );
    const busy = hits.filter((h) => h?.type === "counter" && h.mean > 0);
    expect(busy.length).toBeGreaterThan(0);
    for (const hit of busy) if (hit?.type === "counter") expect(hit.mean).toBeLessThanOrEqual(100);
    expect(hitTest(layout, data, view, width, 5, layout.height + 50)).toBeNull();
  });
});
