import { describe, expect, it } from "vitest";
import { displayValue, perNodeSummary } from "./summary";

const node = (name: string, gpu_count: number | null) => ({
  id: 1,
  name,
  gpu_count,
  cpu_count: 96,
});

describe("perNodeSummary", () => {
  it("collapses equal counts and lists differing ones", () => {
    expect(perNodeSummary([node("algo-1", 8), node("algo-2", 8)], "gpu_count")).toBe("8");
    expect(perNodeSummary([node("algo-1", 8), node("algo-2", 4)], "gpu_count")).toBe(
      "algo-1: 8, algo-2: 4",
    );
    expect(perNodeSummary([node("algo-1", 8)], "cpu_count")).toBe("96");
    expect(perNodeSummary([], "gpu_count")).toBe("—");
    expect(perNodeSummary([node("algo-1", null)], "gpu_count")).toBe("not recorded");
  });
});

describe("displayValue", () => {
  it("shows strings bare and the rest as JSON", () => {
    expect(displayValue("adamw")).toBe("adamw");
    expect(displayValue(3e-4)).toBe("0.0003");
    expect(displayValue(true)).toBe("true");
    expect(displayValue(null)).toBe("null");
    expect(displayValue({ warmup: [1, 2] })).toBe('{"warmup":[1,2]}');
  });
});
