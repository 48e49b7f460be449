import { describe, expect, it } from "vitest";
import { windowSentence } from "./window";

describe("windowSentence", () => {
  it("names the complete steps a page shows", () => {
    const window = {
      window: "complete_steps" as const,
      label: "complete steps #1–#5 (5 of 6)",
      steps_total: 6,
      steps_kept: 5,
      last_step_dropped: true,
    };
    expect(windowSentence(window)).toBe("Showing complete steps #1–#5 (5 of 6).");
  });

  it("counts the steps of the whole trace", () => {
    const window = {
      window: "whole_trace" as const,
      label: "whole trace",
      steps_total: 6,
      steps_kept: 6,
      last_step_dropped: false,
    };
    expect(windowSentence(window)).toBe("Showing whole trace (6 steps).");
  });
});
