import { render, screen } from "@testing-library/react";
import { MemoryRouter } from "react-router";
import { describe, expect, it } from "vitest";
import type { RuleResult } from "../../api/insights";
import { RuleCard } from "./RuleCard";

const underUsed: RuleResult = {
  rule: "LowGPUUtilization",
  description: "Per GPU: 95th percentile below threshold_p95.",
  status: "issue_found",
  triggered: true,
  evaluated: 1,
  trigger_count: 1,
  violations: 1,
  datapoints: 53,
  not_evaluated_reason: null,
  recommendation: "The GPU is under-used: it waits on the host.",
  caused_by: "HostToDeviceCopies",
  params: {},
  evidence: {},
  time_ranges: [],
};

function card(rule: RuleResult) {
  return render(
    <MemoryRouter>
      <RuleCard rule={rule} />
    </MemoryRouter>,
  );
}

describe("RuleCard's cause", () => {
  it("links a finding to the finding that explains it", () => {
    card(underUsed);
    const link = screen.getByRole("link", { name: "HostToDeviceCopies" });
    expect(link.getAttribute("href")).toBe("#rule-HostToDeviceCopies");
    expect(link.closest("p")!.textContent).toBe("Caused by: HostToDeviceCopies");
  });

  it("says nothing of a cause when none is named", () => {
    card({ ...underUsed, caused_by: null });
    expect(screen.queryByText("Caused by:")).toBeNull();
  });
});
