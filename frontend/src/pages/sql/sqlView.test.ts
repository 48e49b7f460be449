import { describe, expect, it } from "vitest";
import { isRunShortcut, resultTable } from "./sqlView";

describe("resultTable", () => {
  it("keys columns by position so repeated names stay apart", () => {
    const table = resultTable(["n", "n"], ["BIGINT", "VARCHAR"], [[1, "x"]]);
    expect(table.columns.map((c) => [c.key, c.label, c.csv, c.code])).toEqual([
      ["c0", "n", "n", false],
      ["c1", "n", "n", true],
    ]);
    expect(table.rows).toEqual([{ c0: 1, c1: "x" }]);
  });

  it("shows integers plainly and lists as JSON", () => {
    const table = resultTable(["a", "b"], ["BIGINT[]", "DOUBLE"], [[[1, 2], 0.1234567]]);
    expect(table.rows[0]).toEqual({ c0: "[1,2]", c1: 0.1234567 });
    expect(table.columns[0]!.format!(1234567)).toBe("1234567");
    expect(table.columns[0]!.format!(0.1234567)).toBe("0.123457");
  });
});

describe("isRunShortcut", () => {
  it("runs on Ctrl+Enter and Cmd+Enter only", () => {
    expect(isRunShortcut({ key: "Enter", ctrlKey: true, metaKey: false })).toBe(true);
    expect(isRunShortcut({ key: "Enter", ctrlKey: false, metaKey: true })).toBe(true);
    expect(isRunShortcut({ key: "Enter", ctrlKey: false, metaKey: false })).toBe(false);
  });
});
