import { describe, expect, it } from "vitest";
import { windowSentence } from "./window";

describe("windowSentence", () => {
  it("names the complete steps a page shows", () => {
    const window = {
      window: "complete_steps" as const,
      label: "complete steps #1–#5 (5 of 6)",
      steps_total: 6,
      steps_kept: 5,
      steps_dropped: 1,
      last_step_dropped: true,
      switch_note: null,
    };
    expect(windowSentence(window)).toBe(
      "Showing complete steps #1–#5 (5 of 6). 1 step dropped: the last of each trace, which the profiler cuts short; every figure leaves it out.",
    );
  });

  it("counts the steps of the whole trace", () => {
    const window = {
      window: "whole_trace" as const,
      label: "whole trace",
      steps_total: 6,
      steps_kept: 6,
      steps_dropped: 0,
      last_step_dropped: false,
      switch_note: null,
    };
    expect(windowSentence(window)).toBe("Showing whole trace (6 steps).");
  });

  it("says why the switch changes nothing on a sampled job", () => {
    const window = {
      window: "whole_trace" as const,
      label: "captured steps 57–60 (4 of 160)",
      steps_total: 160,
      steps_kept: 4,
      steps_dropped: 0,
      last_step_dropped: false,
      switch_note: "The switch changes nothing here: Kineto recorded whole steps.",
    };
    expect(windowSentence(window)).toBe(
      "Showing captured steps 57–60 (4 of 160). The switch changes nothing here: Kineto recorded whole steps.",
    );
  });
});
