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
    expect(headers).toEqual(["Rank", "Step", "Gap"]);
    expect(rows()).toEqual([
      ["2", "9 ms", "1.5 µs"],
      ["9", "–", "700 ns"],
      ["10", "12.5 ms", "3 µs"],
    ]);
    await userEvent.click(screen.getByRole("button", { name: "Rank" }));
    expect(rows().map((row) => row[0])).toEqual(["10", "9", "2"]);
  });

  it("shows evidence in words and readable units, the raw figure on hover", () => {
    render(
      <MemoryRouter>
        <RuleCard
          rule={{
            ...rule,
            evidence: {
              step_ns: 1_483_290_157,
              share_pct: 17.98,
              job_start_ns: 1_795_000_000_000_000_000,
            },
          }}
        />
      </MemoryRouter>,
    );
    const step = screen.getByText("Time in steps").parentElement!;
    expect(step.textContent).toBe("Time in steps1.483 s");
    expect(step.title).toBe("step_ns = 1,483,290,157");
    expect(screen.getByText("Share").parentElement!.textContent).toBe("Share18.0%");
    const start = screen.getByText("Job start").parentElement!;
    expect(start.textContent).toBe("Job start18 Nov 2026, 11:06:40 UTC");
    expect(screen.queryByText(/SHARE PCT|share pct/i)).toBeNull();
  });
});
