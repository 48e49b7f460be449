import { describe, expect, it } from "vitest";
import { parseSource, partLabel, sourceOptions, sourceValue } from "./parts";

const part = (id: number, rank: number, offset_ns: number | null, span_ns: number | null) => ({
  id,
  node: "vm",
  rank,
  offset_ns,
  span_ns,
});

describe("partLabel", () => {
  it("names a rank's only part by node and rank", () => {
    const parts = [part(1, 0, 0, 600_000_000), part(2, 1, 1_000, 600_000_000)];
    expect(partLabel(parts[1]!, parts)).toBe("vm rank 1");
  });

  it("tells a rank's chunks apart by where their events lie", () => {
    // The H200 job's first and third chunks (offsets from its first event).
    const parts = [part(10, 0, 0, 329_300_600), part(12, 0, 8_614_868_130, 306_251_266)];
    expect(partLabel(parts[0]!, parts)).toBe("vm rank 0 · 0.00–0.33 s");
    expect(partLabel(parts[1]!, parts)).toBe("vm rank 0 · 8.61–8.92 s");
  });

  it("says nothing of a time it does not have", () => {
    const parts = [part(10, 0, null, null), part(11, 0, 5, 10)];
    expect(partLabel(parts[0]!, parts)).toBe("vm rank 0");
  });
});

describe("sourceOptions", () => {
  it("offers a rank's chunks summed before each of them", () => {
    const parts = [
      part(10, 0, 0, 329_300_600),
      part(12, 0, 8_614_868_130, 306_251_266),
      { ...part(20, 1, 5, 10), node: "algo:2" },
    ];
    const options = sourceOptions(parts);
    expect(options.map((o) => o.label)).toEqual([
      "vm rank 0 · all 2 parts",
      "vm rank 0 · 0.00–0.33 s",
      "vm rank 0 · 8.61–8.92 s",
      "algo:2 rank 1",
    ]);
    expect(options.map((o) => parseSource(o.value))).toEqual([
      { rank: 0, node: "vm" },
      { part: 10 },
      { part: 12 },
      { part: 20 },
    ]);
    expect(parseSource(sourceValue({ rank: 3, node: "algo:2" }))).toEqual({
      rank: 3,
      node: "algo:2",
    });
  });
});
