import { describe, expect, it } from "vitest";
import { formatCount, formatDuration, formatPercent, formatSeconds, formatSecondsWithUnit, plural, unitFor } from "./units";

describe("dashboard units", () => {
  it("picks the unit in which a duration reads 1 to 999", () => {
    expect(unitFor(0).label).toBe("ns");
    expect(unitFor(999).label).toBe("ns");
    expect(unitFor(1_000).label).toBe("µs");
    expect(unitFor(2_500_000).label).toBe("ms");
    expect(unitFor(3_000_000_000).label).toBe("s");
  });

  it("formats durations to four significant digits", () => {
    expect(formatDuration(42)).toBe("42 ns");
    expect(formatDuration(26_303_973)).toBe("26.3 ms");
    expect(formatDuration(12_345_678)).toBe("12.35 ms");
    expect(formatDuration(850_000)).toBe("850 µs");
    expect(formatDuration(1_234_567_890)).toBe("1.235 s");
    expect(formatDuration(0)).toBe("0 ns");
  });

  it("gives seconds to the microsecond below a second and to the millisecond above", () => {
    expect(formatSeconds(26_303_973)).toBe("0.026304 s");
    expect(formatSeconds(578_888_534)).toBe("0.578889 s");
    expect(formatSeconds(12_345_678_901)).toBe("12.346 s");
    expect(formatSecondsWithUnit(26_303_973)).toBe("0.026304 s (26.3 ms)");
    expect(formatSecondsWithUnit(12_345_678_901)).toBe("12.346 s");
  });

  it("keeps tiny shares visible and refuses a zero whole", () => {
    expect(formatPercent(1, 3)).toBe("33.3%");
    expect(formatPercent(1, 10_000)).toBe("<0.1%");
    expect(formatPercent(0, 10)).toBe("0.0%");
    expect(formatPercent(5, 0)).toBe("—");
  });

  it("counts with separators and plurals", () => {
    expect(formatCount(4350)).toBe("4,350");
    expect(plural(1, "step")).toBe("1 step");
    expect(plural(1200, "step")).toBe("1,200 steps");
  });
});
