import { describe, expect, it } from "vitest";
import { tooltipPosition } from "./tooltipPosition";

const viewport: [number, number] = [1366, 768];

describe("tooltip position", () => {
  it("goes below and right of the pointer when it fits", () => {
    expect(tooltipPosition([100, 50], [300, 80], { left: 200, top: 100 }, viewport)).toEqual([
      114, 64,
    ]);
  });

  it("flips left and up near the window's right and bottom edges", () => {
    // 1200 + 100 + 14 + 300 would pass 1358: the tooltip ends 14 px left of the pointer.
    expect(tooltipPosition([100, 600], [300, 80], { left: 1200, top: 100 }, viewport)).toEqual([
      -214, 506,
    ]);
  });

  it("never leaves the window's left or top edge, even when wider than the room beside the pointer", () => {
    // A 460 px name in a pie at the left of the page: neither side fits; it starts at the margin.
    expect(tooltipPosition([90, 5], [460, 120], { left: 40, top: 10 }, [520, 768])).toEqual([
      -32, 19,
    ]);
    expect(tooltipPosition([5, 5], [100, 700], { left: 20, top: 60 }, viewport)).toEqual([19, -52]);
  });
});
