import { describe, expect, it } from "vitest";
import { HEADER_PX, layoutTracks } from "./layout";
import type { TrackNode } from "./model";
import { colourFor } from "../lib/colour";
import { TimelineRenderer } from "./renderer";
import { recordingContext } from "../canvas/testing";
import { sampleData, sampleTracks as tracks } from "./testdata/fixture";

const data = sampleData();
const roots = tracks.tracks as TrackNode[];
const open = new Set([
  "algo-1",
  "algo-1/gpus",
  "algo-1/597913",
  "algo-1/597913/gpu2/device",
  "algo-1/597913/gpu2/host",
]);
const layout = layoutTracks(roots, open);
const view = {
  startNs: data.grid.startNs,
  endNs: data.grid.startNs + data.grid.count * 2 ** data.grid.k,
};

describe("TimelineRenderer", () => {
  it("fills the rectangles of each colour in one path", () => {
    const { ctx, calls } = recordingContext();
    new TimelineRenderer().render(
      ctx,
      layout,
      { view, widthPx: 800, heightPx: 600, scrollTop: 0 },
      { data, steps: [], selection: null, arrows: [] },
    );
    const rects = calls.filter((c) => c.op === "rect").length;
    const colours = calls.filter((c) => c.op === "fill").map((c) => c.fillStyle);
    expect(rects).toBeGreaterThan(3 * colours.length);
    expect(colours).toContain(colourFor(data.names[data.events.name[0]!]!));
  });

  it("culls what lies outside the view", () => {
    const { ctx, calls } = recordingContext();
    const away = { startNs: view.endNs * 10, endNs: view.endNs * 11 };
    new TimelineRenderer().render(
      ctx,
      layout,
      { view: away, widthPx: 800, heightPx: 600, scrollTop: 0 },
      { data, steps: [], selection: null, arrows: [] },
    );
    // Only the rectangle that clips the rows to the plot remains.
    expect(calls.filter((c) => c.op === "rect").map((c) => c.args)).toEqual([
      [0, HEADER_PX, 800, 600 - HEADER_PX],
    ]);
  });

  it("draws the launch → run arrow of a selection", () => {
    const { ctx, calls } = recordingContext();
    const launch = {
      track: "algo-1/597913/gpu2/host/597913",
      depth: 1,
      startNs: view.startNs + 1000,
      durNs: 500,
    };
    const run = {
      track: "algo-1/597913/gpu2/s0",
      depth: 0,
      startNs: view.startNs + 5000,
      durNs: 800,
    };
    new TimelineRenderer().render(
      ctx,
      layout,
      { view, widthPx: 800, heightPx: 600, scrollTop: 0 },
      { data, steps: [], selection: run, arrows: [{ from: launch, to: run }] },
    );
    expect(calls.filter((c) => c.op === "bezierCurveTo")).toHaveLength(1);
  });
});
