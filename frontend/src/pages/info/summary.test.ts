import { describe, expect, it } from "vitest";
import type { ProfilePart } from "../../api/types";
import { displayValue, parseNs, perNodeSummary } from "./summary";

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

describe("parseNs", () => {
  const part = (overrides: Partial<ProfilePart>) => ({
    state: "done" as ProfilePart["state"],
    started_at: "2025-06-01T10:05:01.250Z",
    finished_at: "2025-06-01T10:05:21.950Z",
    ...overrides,
  });

  it("is the time from the claim to the end of a parsed or failed part", () => {
    expect(parseNs(part({}))).toBe(20_700_000_000);
    expect(parseNs(part({ state: "failed", finished_at: "2025-06-01T10:05:01.500Z" }))).toBe(
      250_000_000,
    );
  });

  it("is unknown while the part waits or runs, or when no worker took it", () => {
    expect(parseNs(part({ state: "processing", finished_at: null }))).toBeNull();
    expect(parseNs(part({ state: "pending", started_at: null, finished_at: null }))).toBeNull();
    expect(parseNs(part({ state: "failed", started_at: null }))).toBeNull();
  });
});
