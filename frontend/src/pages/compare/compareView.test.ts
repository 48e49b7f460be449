import { describe, expect, it } from "vitest";
import { compareLink } from "../../lib/navigation";
import {
  formatChange,
  formatFigure,
  readPair,
  readWindow,
  signedDuration,
  verdict,
} from "./compareView";

describe("comparison links", () => {
  it("reads the two job ids of a shareable link", () => {
    expect(readPair(new URLSearchParams("a=3&b=12"))).toEqual({ a: 3, b: 12 });
    expect(readPair(new URLSearchParams("a=x"))).toEqual({ a: null, b: null });
    expect(readPair(new URLSearchParams(compareLink(3, 12).split("?")[1]))).toEqual({
      a: 3,
      b: 12,
    });
  });

  it("reads the window both jobs are compared in", () => {
    expect(readWindow(new URLSearchParams("a=1&window=complete_steps"))).toBe("complete_steps");
    expect(readWindow(new URLSearchParams("window=x"))).toBeNull();
    expect(readWindow(new URLSearchParams(""))).toBeNull();
  });

  it("signs time changes", () => {
    expect(signedDuration(1_500_000)).toBe("+1.5 ms");
    expect(signedDuration(-20_000)).toBe("−20 µs");
    expect(signedDuration(0)).toBe("0 ns");
  });

  it("writes each figure in its unit", () => {
    expect(formatFigure("kernel_ns", 314_386_250)).toBe("314.4 ms");
    expect(formatFigure("gpu_idle_pct", 12.345)).toBe("12.3 %");
    expect(formatFigure("kernel_runs", 577.5)).toBe("577.5");
    expect(formatFigure("ranks", null)).toBe("—");
    expect(formatChange("gpu_idle_pct", -2)).toBe("−2.0 %");
  });
});

describe("verdicts", () => {
  it("judges a change only where lower is better", () => {
    expect(verdict("lower", 314, 303)).toBe("better");
    expect(verdict("lower", 303, 314)).toBe("worse");
    expect(verdict("lower", 303, 303)).toBeNull();
    expect(verdict(null, 1, 2)).toBeNull();
    expect(verdict("lower", null, 2)).toBeNull();
  });
});
