import { describe, expect, it } from "vitest";
import { binCount, durationBars, histogramBins, niceStep, quantile, summarize } from "./histogram";

const MS = 1_000_000;
const stepsNs = [10, 12, 15, 21, 29].map((ms) => ms * MS);

describe("duration histograms", () => {
  it("interpolates quantiles as numpy does", () => {
    expect(quantile([1, 2, 3, 4], 0.5)).toBe(2.5);
    expect(quantile([1, 2, 3, 4], 0.25)).toBe(1.75);
    expect(quantile([7], 0.95)).toBe(7);
  });

  it("rounds bin widths to 1, 2, 2.5 or 5 times a power of ten", () => {
    expect(niceStep(4.75 * MS)).toBe(5 * MS);
    expect(niceStep(19.8)).toBe(20);
    expect(niceStep(123.75 * MS)).toBe(200 * MS);
    expect(niceStep(2.2)).toBe(2.5);
    expect(niceStep(0.3)).toBe(1); // never narrower than a nanosecond
  });

  it("bins a few steps by Sturges' rule on round edges", () => {
    // Sturges: ceil(log2 5) + 1 = 4 bins over 19 ms → 4.75 ms → 5 ms from 10 ms.
    expect(binCount(stepsNs)).toBe(4);
    expect(histogramBins(stepsNs)).toEqual([
      { startNs: 10 * MS, endNs: 15 * MS, count: 2, members: [0, 1] },
      { startNs: 15 * MS, endNs: 20 * MS, count: 1, members: [2] },
      { startNs: 20 * MS, endNs: 25 * MS, count: 1, members: [3] },
      { startNs: 25 * MS, endNs: 30 * MS, count: 1, members: [4] },
    ]);
  });

  it("bins many values by Freedman–Diaconis", () => {
    const values = Array.from({ length: 100 }, (_, i) => i);
    // IQR 49.5 → width 2·49.5/∛100 = 21.3 → ceil(99 / 21.3) = 5 bins, 19.8 wide → 20.
    expect(binCount(values)).toBe(5);
    expect(histogramBins(values).map((bin) => [bin.startNs, bin.count])).toEqual([
      [0, 20],
      [20, 20],
      [40, 20],
      [60, 20],
      [80, 20],
    ]);
  });

  it("keeps an outlier and the maximum on the last edge in the last bin", () => {
    const values = [...Array<number>(99).fill(10 * MS), 1000 * MS];
    const bins = histogramBins(values);
    expect(bins.map((bin) => [bin.startNs / MS, bin.count])).toEqual([
      [0, 99],
      [200, 0],
      [400, 0],
      [600, 0],
      [800, 1],
    ]);
    expect(histogramBins([0, 100]).map((bin) => bin.count)).toEqual([1, 1]);
  });

  it("puts identical durations in one bin and nothing in no bin", () => {
    expect(histogramBins([7, 7, 7])).toEqual([
      { startNs: 7, endNs: 7, count: 3, members: [0, 1, 2] },
    ]);
    expect(histogramBins([])).toEqual([]);
  });

  it("summarises durations exactly", () => {
    expect(summarize(stepsNs)).toEqual({
      count: 5,
      minNs: 10 * MS,
      maxNs: 29 * MS,
      meanNs: 17.4 * MS,
      medianNs: 15 * MS,
      p95Ns: 27.4 * MS,
    });
    expect(summarize([])).toBeNull();
  });

  it("labels bars by their range and names what few durations a bar holds", () => {
    const { bars, unit } = durationBars(stepsNs, "step", ["s1", "s2", "s3", "s4", "s5"]);
    expect(unit.label).toBe("ms");
    expect(bars.map((bar) => bar.label)).toEqual(["10–15", "15–20", "20–25", "25–30"]);
    expect(bars[0]).toEqual({
      label: "10–15",
      value: 2,
      tip: { title: "10 ms – 15 ms", lines: ["2 steps (40.0%)", "s1, s2"] },
    });
  });
});
