import { QueryClientProvider } from "@tanstack/react-query";
import { render, screen, waitFor } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { RangeTotals } from "../../api/timeline";
import { createQueryClient } from "../../queryClient";
import { FakeApi } from "../../test/fakeApi";
import { RangePane } from "./RangePane";

const TOTALS: RangeTotals = {
  start_ns: "0",
  end_ns: "40000000",
  tracks: ["gpu-0"],
  rows: [
    {
      track: "gpu-0",
      name: "volta_sgemm",
      count: 2,
      total_ns: 10_000_000,
      self_ns: null,
      avg_ns: 5_000_000,
      min_ns: 4_000_000,
      max_ns: 6_000_000,
      pct_of_range: 25,
    },
  ],
};

function renderPane(capturedSteps: string | null): FakeApi {
  const api = new FakeApi().on("GET /api/jobs/7/capture/", {
    status: 200,
    body: { job: 7, reported: capturedSteps !== null, captured_steps: capturedSteps },
  });
  render(
    <QueryClientProvider client={createQueryClient()}>
      <RangePane
        jobId={7}
        startNs={0}
        endNs={40_000_000}
        totals={{ data: TOTALS, error: null, isLoading: false }}
        trackLabel={(id) => id}
        picked={null}
        onPick={() => undefined}
        onClear={() => undefined}
        highlighted={null}
      />
    </QueryClientProvider>,
  );
  return api;
}

describe("The range selection's totals", () => {
  it("say a sampled job's events are only in its captured steps", async () => {
    renderPane("captured steps 3–6, 53–56 (8 of 160)");

    expect(await screen.findByTestId("range-captured")).toHaveTextContent(
      "Kineto recorded events only in the captured steps 3–6, 53–56 (8 of 160): where the range holds other steps, it has no GPU or operator events there, so its shares are lower than the Dashboard's shares of captured time.",
    );
    expect(screen.getByTestId("range-pane")).toHaveTextContent(
      "Totals are over every event in the range, whatever the job's window; % of range is of the range's whole length.",
    );
  });

  it("say nothing of captured steps on an imported trace", async () => {
    const api = renderPane(null);

    await waitFor(() => expect(api.sent("GET /api/jobs/7/capture/")).toHaveLength(1));
    expect(screen.getByTestId("range-pane")).toHaveTextContent("% of range is of the range's");
    expect(screen.queryByTestId("range-captured")).toBeNull();
  });
});
