import { describe, expect, it } from "vitest";
import {
  endOfLocalDayIso,
  formatAgo,
  formatBytes,
  formatElapsedMs,
  formatHours,
  startOfLocalDayIso,
} from "./format";

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
