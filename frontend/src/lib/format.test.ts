import { describe, expect, it } from "vitest";
import {
  endOfLocalDayIso,
  formatAgo,
  formatBytes,
  formatCount,
  formatDuration,
  formatElapsedMs,
  formatHours,
  formatPercent,
  formatSeconds,
  formatSecondsWithUnit,
  plural,
  startOfLocalDayIso,
  unitFor,
} from "./format";

describe("durations", () => {
  it("picks the unit in which a duration reads 1 to 999", () => {
    expect(unitFor(0).label).toBe("ns");
    expect(unitFor(999).label).toBe("ns");
    expect(unitFor(1_000).label).toBe("µs");
    expect(unitFor(2_500_000).label).toBe("ms");
    expect(unitFor(3_000_000_000).label).toBe("s");
  });

  it("formats durations to four significant digits without trailing zeros", () => {
    expect(formatDuration(42)).toBe("42 ns");
    expect(formatDuration(5_280)).toBe("5.28 µs");
    expect(formatDuration(189_000)).toBe("189 µs");
    expect(formatDuration(850_000)).toBe("850 µs");
    expect(formatDuration(17_700_000)).toBe("17.7 ms");
    expect(formatDuration(26_303_973)).toBe("26.3 ms");
    expect(formatDuration(12_345_678)).toBe("12.35 ms");
    expect(formatDuration(1_200_000)).toBe("1.2 ms");
    expect(formatDuration(1_234_567_890)).toBe("1.235 s");
    expect(formatDuration(0)).toBe("0 ns");
  });

  it("keeps the sign of a negative duration", () => {
    expect(formatDuration(-1_500_000)).toBe("-1.5 ms");
  });

  it("gives seconds to the microsecond below a second and to the millisecond above", () => {
    expect(formatSeconds(26_303_973)).toBe("0.026304 s");
    expect(formatSeconds(578_888_534)).toBe("0.578889 s");
    expect(formatSeconds(12_345_678_901)).toBe("12.346 s");
    expect(formatSecondsWithUnit(26_303_973)).toBe("0.026304 s (26.3 ms)");
    expect(formatSecondsWithUnit(12_345_678_901)).toBe("12.346 s");
  });
});

describe("shares and counts", () => {
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

describe("formatBytes", () => {
  it("uses decimal units with one digit below 100", () => {
    expect(formatBytes(0)).toBe("0 B");
    expect(formatBytes(999)).toBe("999 B");
    expect(formatBytes(1000)).toBe("1.0 kB");
    expect(formatBytes(1_534_000)).toBe("1.5 MB");
    expect(formatBytes(123_400_000)).toBe("123 MB");
    expect(formatBytes(20 * 1024 ** 3)).toBe("21.5 GB");
  });

  it("shows a dash for impossible sizes", () => {
    expect(formatBytes(-1)).toBe("—");
    expect(formatBytes(Number.NaN)).toBe("—");
  });
});

describe("formatElapsedMs", () => {
  it("picks the coarsest readable unit", () => {
    expect(formatElapsedMs(45_000)).toBe("45 s");
    expect(formatElapsedMs(12 * 60_000)).toBe("12 min");
    expect(formatElapsedMs(3 * 3600_000)).toBe("3 h");
    expect(formatElapsedMs(3 * 3600_000 + 5 * 60_000)).toBe("3 h 5 min");
    expect(formatElapsedMs(52 * 3600_000)).toBe("2 d 4 h");
  });

  it("never goes negative when clocks disagree", () => {
    expect(formatElapsedMs(-5000)).toBe("0 s");
  });
});

describe("formatAgo", () => {
  it("measures from the given now", () => {
    const now = Date.parse("2025-01-01T12:00:00Z");
    expect(formatAgo("2025-01-01T11:30:00Z", now)).toBe("30 min ago");
    expect(formatAgo("2025-01-01T11:59:30Z", now)).toBe("less than a minute ago");
    expect(formatAgo(null, now)).toBe("—");
  });
});

describe("formatHours", () => {
  it("drops float noise and trailing zeros", () => {
    expect(formatHours(2)).toBe("2 h");
    expect(formatHours(0.1 + 0.2)).toBe("0.3 h");
    expect(formatHours(1.25)).toBe("1.25 h");
  });
});

describe("local day bounds", () => {
  it("spans the whole local day", () => {
    const start = new Date(startOfLocalDayIso("2025-03-09"));
    const end = new Date(endOfLocalDayIso("2025-03-09"));
    expect([start.getFullYear(), start.getMonth(), start.getDate(), start.getHours()]).toEqual([
      2025, 2, 9, 0,
    ]);
    expect([end.getDate(), end.getHours(), end.getMinutes(), end.getMilliseconds()]).toEqual([
      9, 23, 59, 999,
    ]);
  });
});
