import { describe, expect, it } from "vitest";
import { RectBatch } from "./rects";
import { recordingContext } from "./testing";

describe("RectBatch", () => {
  it("fills each style's rectangles in one path, styles in the order they first came", () => {
    const { ctx, calls } = recordingContext();
    const batch = new RectBatch();
    batch.add("#4e79a7", 0, 0, 10, 5);
    batch.add("#f28e2b", 10, 0, 4, 5);
    batch.add("#4e79a7", 20, 6, 2, 5);
    batch.fill(ctx);
    expect(calls.map((c) => [c.op, c.fillStyle, ...c.args])).toEqual([
      ["beginPath", "#4e79a7"],
      ["rect", "#4e79a7", 0, 0, 10, 5],
      ["rect", "#4e79a7", 20, 6, 2, 5],
      ["fill", "#4e79a7"],
      ["beginPath", "#f28e2b"],
      ["rect", "#f28e2b", 10, 0, 4, 5],
      ["fill", "#f28e2b"],
    ]);
  });

  it("starts empty again after a fill", () => {
    const { ctx, calls } = recordingContext();
    const batch = new RectBatch();
    batch.add("#4e79a7", 0, 0, 10, 5);
    batch.fill(ctx);
    batch.fill(ctx);
    expect(calls.filter((c) => c.op === "fill")).toHaveLength(1);
  });
});
