import { describe, expect, it } from "vitest";
import type { RankRow } from "../../api/cluster";
import { byWait, collectiveHeatmapOption, stepBarOption, timelineLink } from "./clusterView";

const row = (rank: number, compute: number): RankRow => ({
  rank,
  node: `algo-${rank}`,
  steps: 2,
  dur_ns: compute + 30,
  gap_ns: 10,
  compute_ns: compute,
  tail_ns: 20,
  comm_ns: 5,
  sync_wait_ns: 0,
  start_ns: "1700000000000000001",
  end_ns: "1700000000000000999",
  comm_total_ns: 10,
  overlap_ns: 5,
  overlap_pct: 50,
});

describe("cluster view helpers", () => {
  it("stacks gap, compute and tail per rank", () => {
    const option = stepBarOption([row(0, 5), row(1, 9)]);
    const series = option.series as { name: string; data: number[] }[];
    expect(series.map((s) => s.name)).toEqual([
      "Iteration gap",
      "Forward + backward",
      "Iteration tail",
    ]);
    expect(series[1]!.data).toEqual([5, 9]);
  });

  it("places heat map cells by rank and collective", () => {
    const option = collectiveHeatmapOption([
      {
        rank: 3,
        collective: "all_reduce",
        count: 1,
        total_ns: 7,
        bytes: 0,
        wait_ns: null,
        max_wait_ns: null,
      },
      {
        rank: 1,
        collective: "broadcast",
        count: 1,
        total_ns: 2,
        bytes: 0,
        wait_ns: null,
        max_wait_ns: null,
      },
    ]);
    const series = option.series as { data: number[][] }[];
    expect(series[0]!.data).toEqual([
      [1, 0, 7],
      [0, 1, 2],
    ]);
  });

  it("orders collective waits longest first, the underivable last", () => {
    const cell = (rank: number, wait: number | null) => ({
      rank,
      collective: "all_reduce",
      count: 2,
      total_ns: 10,
      bytes: 0,
      wait_ns: wait,
      max_wait_ns: wait,
    });
    expect(byWait([cell(0, null), cell(1, 3), cell(2, 0), cell(3, 3)]).map((c) => c.rank)).toEqual([
      1, 3, 2, 0,
    ]);
  });

  it("links a rank to its timeline over its steps, keeping exact nanoseconds", () => {
    expect(timelineLink(4, row(2, 5))).toBe(
      "/jobs/4/timeline?ranks=2&t=1700000000000000001_1700000000000000999",
    );
  });
});
