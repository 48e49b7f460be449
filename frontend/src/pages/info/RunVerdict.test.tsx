import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { RunVerdict } from "../../api/history";
import { alice, FakeApi, loadedProfile, makeJob, page } from "../../test/fakeApi";
import { renderApp } from "../../test/renderApp";

const job = makeJob({ id: 12, name: "bert-run-2" });

const verdict = (overrides: Partial<RunVerdict>): RunVerdict => ({
  job: 12,
  job_name: "bert-run-2",
  series: "bert",
  series_id: 4,
  baseline: 11,
  baseline_name: "bert-run-1",
  status: "regression",
  window: "whole_trace",
  computed_at: "2025-06-01T12:00:00Z",
  reason:
    "Step time 110.00 ms (median of 16 captured steps) against 100.00 ms (median of 16 captured steps): +10.0 %, threshold 5 %, significant.",
  threshold_pct: 5,
  alpha: 0.05,
  baseline_median_ns: 100_000_000,
  run_median_ns: 110_000_000,
  baseline_p95_ns: 104_000_000,
  run_p95_ns: 115_000_000,
  change_pct: 10,
  test: null,
  causes: [],
  ...overrides,
});

const cause = (name: string, delta_ns: number) => ({
  kind: "kernel_grew",
  name,
  baseline_ns: 1_000_000,
  run_ns: 1_000_000 + delta_ns,
  delta_ns,
  step_share_pct: delta_ns / 1e6,
  detail: `Kernel ${name} grew.`,
  extra: {},
});

function showInfo(answer: RunVerdict) {
  const api = new FakeApi()
    .on("GET /api/auth/me/", { status: 200, body: alice })
    .on("GET /api/loaded-profile/", { status: 200, body: loadedProfile(job) })
    .on("GET /api/jobs/12/", { status: 200, body: job })
    .on("GET /api/jobs/12/parts/", { status: 200, body: page([]) })
    .on("GET /api/jobs/12/verdict/", { status: 200, body: answer });
  renderApp("/info");
  return api;
}

async function verdictCard() {
  const heading = await screen.findByRole("heading", { name: "Regression verdict" });
  return heading.closest("section")!;
}

describe("The job's regression verdict on the Info page", () => {
  it("names the series, the baseline and the three largest causes", async () => {
    showInfo(
      verdict({
        causes: [
          cause("ncclAllReduce", 6_000_000),
          cause("gemm_bf16", 2_500_000),
          cause("aten::copy_", 1_200_000),
          cause("softmax", 500_000),
        ],
      }),
    );
    const card = await verdictCard();
    expect(await within(card).findByText("Regression")).toHaveClass("text-error");
    expect(within(card).getByRole("link", { name: "bert" })).toHaveAttribute(
      "href",
      "/history?series=4",
    );
    expect(within(card).getByRole("link", { name: "bert-run-1" })).toHaveAttribute(
      "href",
      "/jobs/11/dashboard",
    );
    expect(card).toHaveTextContent(
      "Step time 110.00 ms (median of 16 captured steps) against 100.00 ms",
    );
    const causes = within(within(card).getByRole("list", { name: "Top causes" })).getAllByRole(
      "listitem",
    );
    expect(causes.map((c) => c.textContent)).toEqual([
      "ncclAllReduce: +6 ms. Kernel ncclAllReduce grew.",
      "gemm_bf16: +2.5 ms. Kernel gemm_bf16 grew.",
      "aten::copy_: +1.2 ms. Kernel aten::copy_ grew.",
    ]);
  });

  it("says a run that could not be judged, and why", async () => {
    showInfo(
      verdict({
        status: "unjudged",
        baseline: null,
        baseline_name: null,
        reason: "No baseline: the series has no earlier run that passed.",
      }),
    );
    const card = await verdictCard();
    expect(await within(card).findByText("Could not judge")).toBeInTheDocument();
    expect(card).toHaveTextContent(
      "Could not judge: No baseline: the series has no earlier run that passed.",
    );
    expect(within(card).queryByRole("list", { name: "Top causes" })).toBeNull();
  });

  it("says a run not judged yet", async () => {
    const api = showInfo(
      verdict({
        status: "pending",
        baseline: null,
        baseline_name: null,
        reason: "Not judged yet: the run is judged once its parts are parsed.",
      }),
    );
    const card = await verdictCard();
    expect(await within(card).findByText("Not judged yet")).toBeInTheDocument();
    expect(within(card).getByRole("link", { name: "bert" })).toBeInTheDocument();
    expect(api.sent("GET /api/jobs/12/verdict/")).toHaveLength(1);
  });
});
