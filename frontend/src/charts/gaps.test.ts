import { describe, expect, it } from "vitest";

import { breakAtGaps } from "./gaps";

describe("lines over sampled captures", () => {
  it("breaks a line where points lie further apart than the typical spacing", () => {
    const points: [number, number][] = [
      [0, 1],
      [10, 2],
      [20, 3],
      [5000, 4],
      [5010, 5],
      [5020, 6],
    ];
    expect(breakAtGaps(points)).toEqual([
      [0, 1],
      [10, 2],
      [20, 3],
      [2510, "-"],
      [5000, 4],
      [5010, 5],
      [5020, 6],
    ]);
  });

  it("leaves evenly spaced points and single points as they are", () => {
    const even: [number, number][] = [
      [0, 1],
      [10, 2],
      [21, 3],
    ];
    expect(breakAtGaps(even)).toEqual(even);
    expect(breakAtGaps([[5, 1]])).toEqual([[5, 1]]);
  });
});
