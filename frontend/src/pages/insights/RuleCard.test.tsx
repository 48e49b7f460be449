import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { MemoryRouter } from "react-router";
import { describe, expect, it } from "vitest";
import type { RuleResult } from "../../api/insights";
import { RuleCard } from "./RuleCard";

const rule: RuleResult = {
  rule: "LoadBalancing",
  description: "Ranks whose step time differs from the others.",
  status: "issue_found",
  triggered: true,
  evaluated: 3,
  trigger_count: 1,
  violations: 1,
  datapoints: 3,
  not_evaluated_reason: null,
  recommendation: "Balance the work across ranks.",
  params: {},
  evidence: {
    threshold: 0.2,
    ranks: {
      "10": { step_ms: 12.5, gap_ns: 3000 },
      "2": { step_ms: 9, gap_ns: 1500, host: "algo-1" },
      "9": { gap_ns: 700 },
    },
  },
  time_ranges: [],
};

function rows(): string[][] {
  return within(screen.getByRole("table", { name: "Per rank" }))
    .getAllByRole("row")
    .slice(1)
    .map((row) =>
      within(row)
        .getAllByRole("cell")
        .map((cell) => cell.textContent!),
    );
}

describe("RuleCard", () => {
  it("lists a finding's per-rank numbers, one row per rank, sortable by rank as a number", async () => {
    render(
      <MemoryRouter>
        <RuleCard rule={rule} />
      </MemoryRouter>,
    );
    const headers = within(screen.getByRole("table", { name: "Per rank" }))
      .getAllByRole("columnheader")
      .map((th) => th.textContent!.replace(/[↕▲▼]/g, ""));
    expect(headers).toEqual(["rank", "step ms", "gap ns"]);
    expect(rows()).toEqual([
      ["2", "9", "1,500"],
      ["9", "–", "700"],
      ["10", "12.50", "3,000"],
    ]);
    await userEvent.click(screen.getByRole("button", { name: "rank" }));
    expect(rows().map((row) => row[0])).toEqual(["10", "9", "2"]);
  });
});
