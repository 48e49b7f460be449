import { describe, expect, it } from "vitest";
import { queueLines, temporalSlices } from "./analysesView";

describe("analyses view", () => {
  it("splits a rank's span into idle, compute and non-compute", () => {
    const slices = temporalSlices({ rank: 0, span_ns: 200, idle_ns: 50, compute_ns: 100, non_compute_ns: 50 });
    expect(slices.map((s) => [s.name, s.value, s.shareText])).toEqual([
      ["Idle", 50, "25.0%"],
      ["Compute", 100, "50.0%"],
      ["Non-compute", 50, "25.0%"],
    ]);
  });

  it("names queue-length lines by rank and stream", () => {
    const [line] = queueLines([{ rank: 1, stream: 7, points: [[10, 2]] }]);
    expect(line!.name).toBe("rank 1 stream 7");
    expect(line!.points).toEqual([[10, 2]]);
  });
});
