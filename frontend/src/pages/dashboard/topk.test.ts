import { describe, expect, it } from "vitest";
import { parseK, topKWithOther } from "./topk";

const rows = [
  { name: "a", total_ns: 50 },
  { name: "b", total_ns: 30 },
  { name: "c", total_ns: 15 },
];

describe("top k with other", () => {
  it("folds everything beyond the first k into other, from the total", () => {
    // The total (120) covers kernels the server left out of its top list (25 ns of them).
    const { slices, other } = topKWithOther(rows, (r) => r.total_ns, 120, 2);
    expect(slices.map((s) => s.row.name)).toEqual(["a", "b"]);
    expect(slices.map((s) => s.value)).toEqual([50, 30]);
    expect(other).toBe(40);
  });

  it("has nothing left over when k covers every kernel", () => {
    expect(topKWithOther(rows, (r) => r.total_ns, 95, 15)).toEqual({
      slices: rows.map((row) => ({ row, value: row.total_ns })),
      other: 0,
    });
  });

  it("accepts whole numbers from 1 to the maximum only", () => {
    expect(parseK("15")).toEqual({ k: 15 });
    expect(parseK(" 200 ")).toEqual({ k: 200 });
    expect(parseK("1")).toEqual({ k: 1 });
    for (const text of ["", "0", "201", "2.5", "-3", "ten"]) {
      expect(parseK(text)).toEqual({ error: "k must be a whole number from 1 to 200." });
    }
  });
});
