import { describe, expect, it } from "vitest";
import { issuesFirst } from "./ruleOrder";

describe("rule order", () => {
  it("puts rules with a finding first and keeps the report's order within each group", () => {
    const rules = [
      { rule: "A", status: "no_issue" },
      { rule: "B", status: "issue_found" },
      { rule: "C", status: "not_evaluated" },
      { rule: "D", status: "issue_found" },
      { rule: "E", status: "no_issue" },
    ];
    expect(issuesFirst(rules).map((r) => r.rule)).toEqual(["B", "D", "A", "C", "E"]);
  });

  it("puts a finding that others name as their cause before them", () => {
    const rules = [
      { rule: "BatchSize", status: "issue_found", caused_by: "HostToDeviceCopies" },
      { rule: "LowGPUUtilization", status: "issue_found", caused_by: "HostToDeviceCopies" },
      { rule: "CPUBottleneck", status: "no_issue", caused_by: null },
      { rule: "HostToDeviceCopies", status: "issue_found", caused_by: null },
    ];
    expect(issuesFirst(rules).map((r) => r.rule)).toEqual([
      "HostToDeviceCopies",
      "BatchSize",
      "LowGPUUtilization",
      "CPUBottleneck",
    ]);
  });
});
