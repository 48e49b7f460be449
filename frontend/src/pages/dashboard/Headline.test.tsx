import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { Insights } from "../../api/insights";
import { withChartLayout } from "../../charts/testing";
import { alice, FakeApi, loadedProfile, makeJob } from "../../test/fakeApi";
import { renderApp } from "../../test/renderApp";
import { makeDashboard } from "./fixtures";
import { HEADLINE } from "./HeadlineFixtures";
import { topFinding } from "./HeadlineModel";

const job = makeJob({ id: 7, name: "h200-resnet50", status: "completed" });

function rule(name: string, status: string, causedBy: string | null = null) {
  return { rule: name, status, recommendation: `fix ${name}`, caused_by: causedBy };
}

function insights(rules: ReturnType<typeof rule>[]) {
  return { status: "done", report: { rules, recommendations: [] } } as unknown as Insights;
}

describe("topFinding", () => {
  it("is the first rule that found an issue", () => {
    const found = topFinding(
      insights([rule("A", "no_issue"), rule("B", "issue_found"), rule("C", "issue_found")]),
    );
    expect(found?.rule).toBe("B");
  });

  it("is the cause another finding names, not that finding", () => {
    const found = topFinding(
      insights([
        rule("BatchSize", "issue_found", "HostToDeviceCopies"),
        rule("LowGPUUtilization", "issue_found", "HostToDeviceCopies"),
        rule("StepOutlier", "issue_found"),
        rule("HostToDeviceCopies", "issue_found"),
      ]),
    );
    expect(found?.rule).toBe("HostToDeviceCopies");
    const uncaused = topFinding(
      insights([
        rule("BatchSize", "issue_found", "DataLoading"),
        rule("StepOutlier", "issue_found"),
      ]),
    );
    expect(uncaused?.rule).toBe("StepOutlier");
  });

  it("is none before the rules ran or when none found an issue", () => {
    expect(topFinding(undefined)).toBeNull();
    expect(topFinding(insights([rule("A", "no_issue")]))).toBeNull();
  });
});

describe("Dashboard headline", () => {
  withChartLayout();

  it("shows the breakdown, both utilisations, the step time and the top finding", async () => {
    new FakeApi()
      .on("GET /api/auth/me/", { status: 200, body: alice })
      .on("GET /api/loaded-profile/", { status: 200, body: loadedProfile(job) })
      .on("GET /api/jobs/7/", { status: 200, body: job })
      .on("GET /api/jobs/7/dashboard/", { status: 200, body: makeDashboard() })
      .on("GET /api/jobs/7/headline/", { status: 200, body: HEADLINE })
      .on("GET /api/histograms/", { status: 200, body: [] })
      .on("GET /api/jobs/7/insights/", {
        status: 200,
        body: insights([
          rule("LowGPUUtilization", "no_issue"),
          rule("PageableCopies", "issue_found"),
        ]),
      });
    renderApp("/dashboard");

    const headline = await screen.findByRole("region", { name: "Headline" });
    expect(within(headline).getByText("51.57 ms")).toBeInTheDocument();
    expect(within(headline).getByText("median of 16 captured steps")).toBeInTheDocument();
    expect(within(headline).getByText("49.6%")).toBeInTheDocument();
    expect(within(headline).getByText("53.4%")).toBeInTheDocument();
    expect(within(headline).getByText(/GPU kernels 28.18 ms · 53.4%/)).toBeInTheDocument();
    expect(within(headline).getByText(/Memory copies 11.57 ms · 21.9%/)).toBeInTheDocument();
    const link = await within(headline).findByRole("link", { name: "PageableCopies" });
    expect(link).toHaveAttribute("href", "/jobs/7/insights#rule-PageableCopies");
    expect(
      within(headline).getByText(/Host only \(GPU idle\) 893.5 µs · 1.7%/),
    ).toBeInTheDocument();
  });

  it("on a job without a GPU says so instead of GPU figures and GPU idle time", async () => {
    const cpuOnly = makeJob({
      id: 7,
      name: "jax-cpu",
      framework: "JAX",
      nodes: [{ id: 1, name: "vm", hostname: "vm", gpu_count: 0, cpu_count: 2 }],
    });
    new FakeApi()
      .on("GET /api/auth/me/", { status: 200, body: alice })
      .on("GET /api/loaded-profile/", { status: 200, body: loadedProfile(cpuOnly) })
      .on("GET /api/jobs/7/", { status: 200, body: cpuOnly })
      .on("GET /api/jobs/7/dashboard/", { status: 200, body: makeDashboard() })
      .on("GET /api/jobs/7/headline/", {
        status: 200,
        body: {
          ...HEADLINE,
          kernel_busy_pct: 0,
          nvml_mean_pct: null,
          breakdown: HEADLINE.breakdown.map((row) =>
            ["kernels", "copies", "sets", "sync_waits"].includes(row.part)
              ? { ...row, total_ns: 0, per_step_ns: 0, share_pct: 0 }
              : row,
          ),
        },
      })
      .on("GET /api/histograms/", { status: 200, body: [] })
      .on("GET /api/jobs/7/insights/", { status: 200, body: insights([]) });
    renderApp("/dashboard");

    const headline = await screen.findByRole("region", { name: "Headline" });
    expect(within(headline).getAllByText("not available: no GPU in this job")).toHaveLength(2);
    expect(within(headline).queryByText("0.0%")).not.toBeInTheDocument();
    expect(within(headline).getByText(/Host time \(no GPU\) 893.5 µs · 1.7%/)).toBeInTheDocument();
    expect(within(headline).queryByText(/GPU idle/)).not.toBeInTheDocument();
    // The GPU's parts of a step are not shown as zeros; the host's and the idle time are.
    const legend = within(headline)
      .getAllByRole("listitem")
      .map((item) => item.textContent);
    expect(legend.map((text) => text?.split(" ")[0])).toEqual(["Data", "Host", "Idle"]);
  });
});
