import { describe, expect, it } from "vitest";
import { layoutFlame, matching, pathIds } from "./flame";
import { frames, names } from "./testing";

describe("layoutFlame", () => {
  it("places children inside their parent, largest first, roots sharing the width", () => {
    const rects = Object.fromEntries(layoutFlame(frames).map((r) => [r.frame, r]));
    expect(rects[0]).toEqual({ frame: 0, depth: 0, x0: 0, x1: 0.9 });
    expect(rects[4]).toMatchObject({ depth: 0, x0: 0.9 });
    expect(rects[4]!.x1).toBeCloseTo(1);
    expect(rects[1]).toMatchObject({ depth: 1, x0: 0 });
    expect(rects[1]!.x1).toBeCloseTo(0.6);
    expect(rects[2]!.x0).toBeCloseTo(0.6);
    expect(rects[3]).toMatchObject({ depth: 2, x0: 0 });
    expect(rects[3]!.x1).toBeCloseTo(0.4);
  });

  it("zoomed on a frame, fills the width with it under its ancestors", () => {
    const rects = layoutFlame(frames, 1);
    expect(rects.map((r) => [r.frame, r.depth, r.x0, r.x1])).toEqual([
      [0, 0, 0, 1],
      [1, 1, 0, 1],
      [3, 2, 0, 40 / 60],
    ]);
  });

  it("leaves out frames narrower than the minimum", () => {
    expect(layoutFlame(frames, null, 0.2).map((r) => r.frame)).toEqual([0, 1, 3, 2]);
  });
});

describe("search and paths", () => {
  it("matches names in any case and gives a frame's path of name ids", () => {
    expect([...matching(frames, names, "WARD")]).toEqual([1, 2]);
    expect(matching(frames, names, " ").size).toBe(0);
    expect(pathIds(frames, [10, 11, 12, 13, 14], 3)).toEqual([10, 11, 13]);
  });
});
