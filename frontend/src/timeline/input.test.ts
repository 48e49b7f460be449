import { describe, expect, it } from "vitest";
import { HeldKeys, PointerGesture, isNavigationKey, keyName } from "./input";
import { layoutTracks } from "./layout";
import type { TrackNode } from "./model";
import { sampleTracks } from "./testdata/fixture";

const BOUNDS = { startNs: 0, endNs: 1e9 };
const VIEW = { startNs: 4e8, endNs: 5e8 }; // 100 ms wide, far from the bounds
const roots = sampleTracks.tracks as TrackNode[];
const layout = layoutTracks(
  roots,
  new Set([
    "algo-1",
    "algo-1/gpus",
    "algo-1/597913",
    "algo-1/597913/gpu2/device",
    "algo-1/597913/gpu2/host",
  ]),
);
const lanes = layout.rows.filter((row) => row.kind === "events" || row.kind === "aggregate");

describe("HeldKeys", () => {
  it("holds only the zoom and pan keys, once each, letters in any case", () => {
    const keys = new HeldKeys();
    expect(keyName({ key: "W" })).toBe("w");
    expect(isNavigationKey("ArrowLeft")).toBe(true);
    expect(keys.press("f")).toBe(false);
    expect(keys.press("w")).toBe(true);
    expect(keys.press("w")).toBe(false);
    expect(keys.press("d")).toBe(true);
    expect(keys.release("w")).toBe(false);
    expect(keys.release("d")).toBe(true);
    expect(keys.any).toBe(false);
  });

  it("zooms about the middle and pans by the time held, a stalled frame counting 50 ms", () => {
    const keys = new HeldKeys();
    keys.press("w");
    expect(keys.tick(VIEW, 1000, BOUNDS)).toEqual(VIEW); // the first tick only starts the clock
    const zoomed = keys.tick(VIEW, 1040, BOUNDS);
    const span = 1e8 * Math.exp(-3 * 0.04);
    expect(zoomed.endNs - zoomed.startNs).toBeCloseTo(span, 0);
    expect((zoomed.startNs + zoomed.endNs) / 2).toBeCloseTo(4.5e8, 0);
    keys.release("w");
    keys.press("d");
    keys.tick(VIEW, 2000, BOUNDS);
    const panned = keys.tick(VIEW, 7000, BOUNDS); // five seconds: one frame stalled
    expect(panned.startNs).toBeCloseTo(4e8 + 0.8 * 0.05 * 1e8, 0);
    expect(panned.endNs - panned.startNs).toBeCloseTo(1e8, 0);
  });
});

describe("PointerGesture", () => {
  const at = (t: number, y: number) => ({ t, y });

  it("takes a press let go where it began for a click", () => {
    const gesture = new PointerGesture();
    gesture.press(100, 50, at(4.5e8, 20), false, VIEW);
    expect(gesture.drag(102, 51, 1000, at(4.5e8, 21), layout, BOUNDS)).toEqual({ kind: "still" });
    expect(gesture.release(at(4.5e8, 21), layout)).toEqual({ kind: "click" });
    expect(gesture.release(at(4.5e8, 21), layout)).toBeNull();
  });

  it("pans time with the whole drag and scrolls the rows by each move", () => {
    const gesture = new PointerGesture();
    gesture.press(100, 50, at(4.5e8, 20), false, VIEW);
    // 100 px of a 1000 px plot to the right: a tenth of the span earlier.
    expect(gesture.drag(200, 40, 1000, at(0, 0), layout, BOUNDS)).toEqual({
      kind: "pan",
      view: { startNs: 3.9e8, endNs: 4.9e8 },
      scrollByPx: 10,
    });
    expect(gesture.drag(300, 45, 1000, at(0, 0), layout, BOUNDS)).toEqual({
      kind: "pan",
      view: { startNs: 3.8e8, endNs: 4.8e8 },
      scrollByPx: -5,
    });
    expect(gesture.release(null, layout)).toEqual({ kind: "panned" });
  });

  it("selects the range and the tracks a shift-drag spans, drawn while it runs", () => {
    const gesture = new PointerGesture();
    const top = lanes[0]!;
    const second = lanes[1]!;
    gesture.press(0, 0, at(4.6e8, top.y + 1), true, VIEW);
    const step = gesture.drag(0, 0, 1000, at(4.2e8, second.y + 1), layout, BOUNDS);
    const area = { startNs: 4.2e8, endNs: 4.6e8, tracks: [top.node.id, second.node.id] };
    expect(step).toEqual({ kind: "area", draft: area });
    expect(gesture.draft).toEqual(area);
    expect(gesture.release(at(4.2e8, second.y + 1), layout)).toEqual({ kind: "area", area });
    expect(gesture.draft).toBeNull();
  });

  it("marks a place with m and selects up to a second m; Escape forgets the mark", () => {
    const gesture = new PointerGesture();
    const row = lanes[0]!;
    expect(gesture.markAt(at(4.1e8, row.y + 1), layout)).toBeUndefined();
    gesture.clearMark();
    expect(gesture.markAt(at(4.3e8, row.y + 1), layout)).toBeUndefined();
    expect(gesture.markAt(at(4.2e8, row.y + 2), layout)).toEqual({
      startNs: 4.2e8,
      endNs: 4.3e8,
      tracks: [row.node.id],
    });
  });
});
