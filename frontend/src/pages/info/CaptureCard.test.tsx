import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { JobCapture, ProcessCapture } from "../../api/capture";
import { alice, FakeApi, loadedProfile, makeJob, page } from "../../test/fakeApi";
import { renderApp } from "../../test/renderApp";

const job = makeJob({ id: 12, name: "resnet-collector" });
const MS = 1_000_000;

/** The budget figures a process reports and its job sums: one process, so the same. */
const FIGURES = {
  schedule: "budget",
  budget_pct: 1,
  elapsed_ns: 600_000 * MS,
  cost_ns: 2_820 * MS,
  background_ns: 300 * MS,
  overhead_pct: 0.47,
  steps_run: 1_200,
  steps_captured: 20,
  captured_pct: (100 * 20) / 1_200,
  windows_total: 4,
  exceeded: false,
} as const;

const process = (overrides: Partial<ProcessCapture>): ProcessCapture => ({
  node: "algo-1",
  rank: 0,
  pid: 4242,
  ...FIGURES,
  windows: [
    { first_step: 57, last_step: 61, kind: "full", cost_ns: 1_250 * MS },
    { first_step: 357, last_step: 361, kind: "gpu", cost_ns: 420 * MS },
    { first_step: 657, last_step: 661, kind: "gpu", cost_ns: 430 * MS },
    { first_step: 957, last_step: 961, kind: "gpu", cost_ns: 420 * MS },
  ],
  windows_count: 4,
  ...overrides,
});

const report = (overrides: Partial<JobCapture>): JobCapture => ({
  job: 12,
  reported: true,
  captured_steps: "captured steps 57–61, 357–361, 657–661, 957–961 (20 of 1,200)",
  distinct_steps_run: 1_200,
  distinct_steps_captured: 20,
  ...FIGURES,
  windows_by_kind: { gpu: 3, full: 1, cpu: 0 },
  processes: [process({})],
  ...overrides,
});

function showInfo(answer: JobCapture) {
  new FakeApi()
    .on("GET /api/auth/me/", { status: 200, body: alice })
    .on("GET /api/loaded-profile/", { status: 200, body: loadedProfile(job) })
    .on("GET /api/jobs/12/", { status: 200, body: job })
    .on("GET /api/jobs/12/parts/", { status: 200, body: page([]) })
    .on("GET /api/jobs/12/capture/", { status: 200, body: answer });
  renderApp("/info");
}

async function captureCard() {
  const heading = await screen.findByRole("heading", { name: "Profiler cost and coverage" });
  return heading.closest("section")!;
}

/** The facts list as term → description. */
function facts(card: HTMLElement): Record<string, string> {
  const terms = within(card).getAllByRole("term");
  return Object.fromEntries(
    terms.map((term) => [term.textContent, term.nextElementSibling?.textContent ?? ""]),
  );
}

describe("The collector's cost and coverage on the Info page", () => {
  it("states the budget, the measured overhead, the steps captured and each window", async () => {
    showInfo(report({}));
    const card = await captureCard();
    await within(card).findByText("1 % of wall time");
    expect(facts(card)).toEqual({
      Budget: "1 % of wall time",
      Overhead:
        "0.47 % measured: Kineto windows 0.42 %, the collector's threads and packing 0.05 %",
      Schedule: "spaced by the budget",
      "Steps captured": "20 of 1,200 steps (1.7 %) in 4 windows: 3 GPU-only, 1 full",
      "Captured steps": "captured steps 57–61, 357–361, 657–661, 957–961 (20 of 1,200)",
    });
    expect(within(card).queryByRole("alert")).not.toBeInTheDocument();
    const rows = within(within(card).getByRole("table", { name: "Profiler windows" })).getAllByRole(
      "row",
    );
    expect(rows.slice(1).map((row) => row.textContent)).toEqual([
      "algo-1 rank 0, pid 424257–61GPU and CPU operators1,250.0 ms",
      "algo-1 rank 0, pid 4242357–361GPU only420.0 ms",
      "algo-1 rank 0, pid 4242657–661GPU only430.0 ms",
      "algo-1 rank 0, pid 4242957–961GPU only420.0 ms",
    ]);
  });

  it("counts a job's steps once on every line, and the processes' sums only where it says so", async () => {
    // Two processes run steps 0–14 in step and both record steps 3–5 and 10–12: 6 of the job's
    // 15 steps, 6 of each process's 15.
    const rank = (rank: number, pid: number) =>
      process({
        node: `algo-${rank + 1}`,
        rank,
        pid,
        steps_run: 15,
        steps_captured: 6,
        captured_pct: 40,
        windows_total: 2,
        windows: [
          { first_step: 3, last_step: 5, kind: "gpu", cost_ns: 30 * MS },
          { first_step: 10, last_step: 12, kind: "gpu", cost_ns: 30 * MS },
        ],
        windows_count: 2,
      });
    showInfo(
      report({
        captured_steps: "captured steps 3–5, 10–12 (6 of 15)",
        distinct_steps_run: 15,
        distinct_steps_captured: 6,
        steps_run: 30,
        steps_captured: 12,
        captured_pct: 40,
        windows_total: 4,
        windows_by_kind: { gpu: 4, full: 0, cpu: 0 },
        processes: [rank(0, 100), rank(1, 200)],
      }),
    );
    const card = await captureCard();
    await within(card).findByText("1 % of wall time");
    expect(facts(card)).toMatchObject({
      "Steps captured": "6 of 15 steps (40 %) in 4 windows over 2 processes: 4 GPU-only",
      "Captured steps": "captured steps 3–5, 10–12 (6 of 15)",
      "Steps per process, summed": "12 of 30 steps (40 %), summed over 2 processes",
    });
  });

  it("warns when a process went over its budget, and says when windows were left out", async () => {
    const over = process({
      node: "algo-2",
      rank: 1,
      pid: 77,
      schedule: "fixed",
      cost_ns: 9_000 * MS,
      overhead_pct: 1.5,
      exceeded: true,
      steps_captured: 1,
      captured_pct: 100 / 1_200,
      windows: [{ first_step: 900, last_step: 900, kind: "cpu", cost_ns: 9_000 * MS }],
      windows_count: 501,
    });
    showInfo(
      report({
        schedule: null,
        budget_pct: null,
        exceeded: true,
        captured_steps: "captured steps 57–61, 357–361, 657–661, 900, 957–961 (21 of 1,200)",
        distinct_steps_captured: 21,
        steps_run: 2_400,
        steps_captured: 21,
        captured_pct: (100 * 21) / 2_400,
        windows_by_kind: { gpu: 3, full: 1, cpu: 501 },
        windows_total: 505,
        processes: [process({}), over],
      }),
    );
    const card = await captureCard();
    expect(await within(card).findByRole("alert")).toHaveTextContent(
      "The collector went over its budget: algo-2 rank 1, pid 77 measured 1.5 % against 1 %.",
    );
    expect(facts(card)).toMatchObject({
      Budget: "differs between processes",
      Schedule: "differs between processes",
      "Steps captured":
        "21 of 1,200 steps (1.8 %) in 505 windows over 2 processes: 3 GPU-only, 1 full, 501 CPU-only",
      "Steps per process, summed": "21 of 2,400 steps (0.9 %), summed over 2 processes",
    });
    expect(within(card).getByRole("row", { name: /algo-2 rank 1, pid 77 900 / })).toHaveTextContent(
      "CPU operators (no GPU)",
    );
    expect(
      within(card).getByText("algo-2 rank 1, pid 77: the last 1 of its 501 windows."),
    ).toBeInTheDocument();
  });

  it("says when the collector reported nothing, with the captured steps", async () => {
    showInfo(
      report({
        reported: false,
        captured_steps: "captured steps 57–60 (4 of 160)",
        distinct_steps_run: 160,
        distinct_steps_captured: 4,
        budget_pct: null,
        schedule: null,
        elapsed_ns: null,
        cost_ns: null,
        background_ns: null,
        overhead_pct: null,
        steps_run: null,
        steps_captured: null,
        captured_pct: null,
        windows_total: null,
        windows_by_kind: null,
        exceeded: null,
        processes: [],
      }),
    );
    const card = await captureCard();
    expect(
      await within(card).findByText(
        "This job's collector did not report its cost (an older collector or an imported trace).",
      ),
    ).toBeInTheDocument();
    expect(facts(card)).toEqual({ "Captured steps": "captured steps 57–60 (4 of 160)" });
    expect(within(card).queryByRole("table")).not.toBeInTheDocument();
  });
});
