import { describe, expect, it } from "vitest";
import type { SeriesRun } from "../../api/history";
import {
  kernelTypeLines,
  latestJudged,
  readSeries,
  runAt,
  runCount,
  runLabel,
  splitMatch,
  stepOption,
  stepLines,
  utilisationLines,
  verdictLabel,
} from "./historyView";

function run(job: number, status: string | null, figures: Partial<SeriesRun["figures"]> | null) {
  return {
    job,
    job_name: `nccl-${job}`,
    created_at: "2026-11-26T10:00:00Z",
    job_status: "completed",
    is_baseline: false,
    figures: figures && {
      window: "whole_trace",
      ranks: 1,
      steps: 3,
      rank_steps: 3,
      step_p50_ns: null,
      step_p95_ns: null,
      gpu_util_pct: null,
      kernel_ns_per_step: {},
      top_kernels: [],
      top_operators: [],
      ...figures,
    },
    verdict_status: status,
    verdict_baseline: null,
    change_pct: null,
  } as SeriesRun;
}

const RUNS = [
  run(1, "unjudged", {
    step_p50_ns: 222_442_191,
    step_p95_ns: 224_686_838,
    gpu_util_pct: 61.5,
    kernel_ns_per_step: { COMP: 120_000_000, COMM: 15_587_386, OTHER: 0 },
  }),
  run(2, "regression", {
    step_p50_ns: 249_952_679,
    step_p95_ns: 269_369_462,
    gpu_util_pct: null,
    kernel_ns_per_step: { COMP: 126_000_000, COMM: 43_644_681, OTHER: 0 },
  }),
  run(3, null, null),
];

describe("history charts", () => {
  it("plots each run at its position, in milliseconds, skipping runs without figures", () => {
    const [median, p95] = stepLines(RUNS);
    expect(median!.points).toEqual([
      [1, 222.442191],
      [2, 249.952679],
    ]);
    expect(p95!.points.map(([x]) => x)).toEqual([1, 2]);
    expect(utilisationLines(RUNS)[0]!.points).toEqual([[1, 61.5]]);
    const comm = kernelTypeLines(RUNS).find((line) => line.name === "Communication")!;
    expect(comm.points).toEqual([
      [1, 15.587386],
      [2, 43.644681],
    ]);
  });

  it("names a position by its run", () => {
    expect(runLabel(RUNS, 2)).toBe("#2 nccl-2");
    expect(runLabel(RUNS, 1.5)).toBe("");
    expect(runLabel(RUNS, 9)).toBe("");
  });

  it("finds the run a clicked point stands for", () => {
    expect(runAt(RUNS, 1)!.job).toBe(1);
    expect(runAt(RUNS, 2)!.job).toBe(2);
    expect(runAt(RUNS, 0)).toBeNull();
    expect(runAt(RUNS, 2.5)).toBeNull();
    expect(runAt(RUNS, 9)).toBeNull();
  });

  it("picks the latest judged run and reads the address", () => {
    expect(latestJudged(RUNS)!.job).toBe(2);
    expect(latestJudged([RUNS[2]!])!.job).toBe(3);
    expect(latestJudged([])).toBeNull();
    expect(readSeries(new URLSearchParams("series=4"))).toBe(4);
    expect(readSeries(new URLSearchParams("series=x"))).toBeNull();
    expect(verdictLabel("unjudged")).toBe("Could not judge");
    expect(verdictLabel(null)).toBe("—");
  });

  it("marks what a search matched, in any case", () => {
    expect(splitMatch("Bert-large", "BERT")).toEqual(["", "Bert", "-large"]);
    expect(splitMatch("my-bert-base", "bert")).toEqual(["my-", "bert", "-base"]);
    expect(splitMatch("gpt-2", "llama")).toEqual(["gpt-2", "", ""]);
    expect(splitMatch("gpt-2", "")).toEqual(["gpt-2", "", ""]);
  });

  it("moves the active option within the list and counts runs", () => {
    expect(stepOption(-1, 1, 3)).toBe(0);
    expect(stepOption(-1, -1, 3)).toBe(2);
    expect(stepOption(0, 1, 3)).toBe(1);
    expect(stepOption(2, 1, 3)).toBe(2);
    expect(stepOption(0, -1, 3)).toBe(0);
    expect(stepOption(-1, 1, 0)).toBe(-1);
    expect(runCount(1)).toBe("1 run");
    expect(runCount(12)).toBe("12 runs");
  });
});
