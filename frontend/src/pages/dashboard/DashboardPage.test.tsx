import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { CustomHistogram, Dashboard } from "../../api/dashboard";
import { withChartLayout } from "../../charts/testing";
import { alice, FakeApi, loadedProfile, makeJob } from "../../test/fakeApi";
import { renderApp } from "../../test/renderApp";
import { LONG_KERNEL, makeDashboard } from "./fixtures";
import { HEADLINE } from "./HeadlineFixtures";

const job = makeJob({ id: 7, name: "resnet50-ddp", status: "in_progress", ended_at: null });

const PANELS = [
  "GPU active time",
  "GPU utilisation over time",
  "CPU active time",
  "CPU utilisation over time",
  "Time spent by all GPU kernels",
  "Time spent by the top 15 GPU kernels",
  "Launch counts of all GPU kernels",
  "Launch counts of the top 15 GPU kernels",
  "Step time distribution",
  "Kernel precision distribution",
  "GPU activity distribution",
  "GPU memory operations distribution",
  "Create new histogram",
];

// What arrived of the job: rank 0 of the 2 its traces name, or both.
function summary(ranks: number[]) {
  return {
    job: 7,
    event_counts: {},
    n_events: 9_348,
    start_ns: 0,
    end_ns: 578_889_000,
    span_ns: 578_889_000,
    recorded_start_ns: null,
    ranks,
    world_size: 2,
    missing_ranks: ranks.length === 2 ? [] : [[1, 1]],
    nodes: ["algo-1"],
    parts: { pending: 0, processing: 0, done: ranks.length, failed: 0, total: ranks.length },
    progress: 1,
    read_warnings: [],
  };
}

function serve(dashboard: Dashboard, histograms: CustomHistogram[] = [], ranks = [0, 1]) {
  let nextId = 40;
  return new FakeApi()
    .on("GET /api/auth/me/", { status: 200, body: alice })
    .on("GET /api/jobs/7/summary/", { status: 200, body: summary(ranks) })
    .on("GET /api/loaded-profile/", { status: 200, body: loadedProfile(job) })
    .on("GET /api/jobs/7/", { status: 200, body: job })
    .on("GET /api/jobs/7/dashboard/", { status: 200, body: dashboard })
    .on("GET /api/jobs/7/headline/", { status: 200, body: HEADLINE })
    .on("GET /api/histograms/", { status: 200, body: histograms })
    .on("POST /api/histograms/", async (request) => {
      const body = (await request.json()) as { job: number; annotation_name: string };
      return { status: 201, body: { id: nextId++, ...body, created_at: "2025-06-02T09:30:00Z" } };
    })
    .on("DELETE /api/histograms/40/", { status: 204 })
    .on("GET /api/jobs/7/annotations/durations/", (_, url) => ({
      status: 200,
      body: { name: url.searchParams.get("name"), durations_ns: [4_000_000, 5_000_000, 9_000_000] },
    }));
}

// Thirteen charts render their SVG in jsdom, which takes seconds when test files run in parallel.

// By heading text rather than by role: computing accessible names across the charts' SVG is slow.
function panel(title: string): HTMLElement {
  return screen.getByText(title, { selector: ".panel h3" }).closest("section")!;
}

async function findPanel(title: string): Promise<HTMLElement> {
  return (await screen.findByText(title, { selector: ".panel h3" })).closest("section")!;
}

function legendRows(title: string): HTMLElement[] {
  return [...panel(title).querySelectorAll<HTMLElement>(".pie-legend tr")];
}

describe("Dashboard page", () => {
  withChartLayout();

  it("shows all thirteen panels of the loaded job, with exact values and why panels are empty", async () => {
    serve(makeDashboard({ partial: true }));
    renderApp("/dashboard");

    await findPanel("GPU active time");
    const heading = document.querySelector<HTMLElement>(".dashboard-heading h2")!;
    expect(heading).toHaveTextContent("resnet50-ddp");
    expect(within(heading).getByText("partial")).toHaveClass("badge-partial");
    for (const title of PANELS) expect(panel(title)).toBeInTheDocument();
    expect(
      screen.getByText("Profile span 0.578889 s · 2 nodes · 4,350 kernel runs"),
    ).toBeInTheDocument();

    expect(legendRows("GPU active time").map((row) => row.textContent)).toEqual([
      "Active812 points81.2%",
      "Idle188 points18.8%",
    ]);
    expect(
      within(panel("CPU active time")).getByText("No CPU samples in an imported trace."),
    ).toBeInTheDocument();
    expect(
      within(panel("CPU utilisation over time")).getByText("No CPU samples in an imported trace."),
    ).toBeInTheDocument();
    expect(
      await within(panel("GPU utilisation over time")).findByRole("img", {}),
    ).toBeInTheDocument();

    const kernels = legendRows("Time spent by all GPU kernels");
    expect(kernels).toHaveLength(16); // the top 15 and Other
    const longName = within(kernels[0]!).getByTitle(LONG_KERNEL);
    expect(longName).toHaveTextContent(
      "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, Array<char*, 3> >",
    );
    expect(kernels[0]).toHaveTextContent("0.026304 s4.5%");
    expect(kernels[15]).toHaveTextContent("Other");
    expect(legendRows("Time spent by the top 15 GPU kernels")).toHaveLength(15);
    expect(legendRows("Launch counts of all GPU kernels")[0]).toHaveTextContent("4059.3%");
    expect(legendRows("Launch counts of the top 15 GPU kernels")).toHaveLength(15);

    const steps = panel("Step time distribution");
    expect(within(steps).getByText("5 steps")).toBeInTheDocument();
    expect(within(steps).getByText("17.4 ms")).toBeInTheDocument(); // mean of 10, 12, 15, 21, 29
    expect(legendRows("Kernel precision distribution").map((row) => row.textContent)).toEqual([
      "FP320.240000 s96.0%",
      "INT640.010000 s4.0%",
    ]);
    expect(legendRows("GPU activity distribution")).toHaveLength(3);
    expect(legendRows("GPU memory operations distribution")[0]).toHaveTextContent(
      "Memcpy HtoD0.030000 s73.2%",
    );
  });

  it("changes how many kernels the all-kernels pies show with k, and refuses a k out of range", async () => {
    serve(makeDashboard());
    renderApp("/dashboard");

    const k = await screen.findByLabelText("Time spent by all GPU kernels: kernels shown (k)", {});
    await userEvent.clear(k);
    await userEvent.type(k, "3");
    expect(legendRows("Time spent by all GPU kernels").map((row) => row.textContent)).toEqual([
      expect.stringContaining("vectorized_elementwise"),
      expect.stringContaining("volta_sgemm_64x64_nt"),
      expect.stringContaining("kernel_03"),
      "Other0.191028 s33.0%",
    ]);

    await userEvent.clear(k);
    await userEvent.type(k, "0");
    expect(within(panel("Time spent by all GPU kernels")).getByRole("alert")).toHaveTextContent(
      "k must be a whole number from 1 to 200.",
    );
    expect(legendRows("Time spent by all GPU kernels")).toHaveLength(4);
    // The launch-count pie has its own k.
    expect(legendRows("Launch counts of all GPU kernels")).toHaveLength(16);
  });

  it("adds a histogram of an annotation picked from the drop-down, and removes it", async () => {
    const api = serve(makeDashboard());
    renderApp("/dashboard");

    const create = await findPanel("Create new histogram");
    const select = within(create).getByLabelText("Annotation");
    await waitFor(() => expect(select).toBeEnabled());
    expect(
      within(select)
        .getAllByRole("option")
        .map((o) => o.textContent),
    ).toEqual(["Choose an annotation…", "## backward ##", "## forward ##", "## optimizer ##"]);
    await userEvent.selectOptions(select, "## forward ##");
    await userEvent.click(within(create).getByRole("button", { name: "Add histogram" }));

    const forward = await findPanel("## forward ## durations");
    expect(api.sent("POST /api/histograms/")[0]!.body).toEqual({
      job: 7,
      annotation_name: "## forward ##",
    });
    expect(await within(forward).findByText("3 occurrences", {})).toBeInTheDocument();
    expect(within(forward).getByText("6 ms")).toBeInTheDocument(); // mean of 4, 5 and 9 ms
    const [durations] = api.sent("GET /api/jobs/7/annotations/durations/");
    expect(durations!.url.searchParams.get("name")).toBe("## forward ##");
    // One histogram per annotation: the one just added leaves the drop-down.
    expect(within(select).queryByRole("option", { name: "## forward ##" })).toBeNull();

    await userEvent.click(
      within(forward).getByRole("button", { name: "Remove the ## forward ## histogram" }),
    );
    await waitFor(() => expect(screen.queryByText("## forward ## durations")).toBeNull());
    expect(api.sent("DELETE /api/histograms/40/")).toHaveLength(1);
  });

  it("shows the histograms this user kept for the job", async () => {
    const kept = {
      id: 9,
      job: 7,
      annotation_name: "## backward ##",
      created_at: "2025-06-01T12:00:00Z",
    };
    const api = serve(makeDashboard(), [kept]);
    renderApp("/dashboard");

    const backward = await findPanel("## backward ## durations");
    expect(await within(backward).findByText("3 occurrences", {})).toBeInTheDocument();
    expect(api.sent("GET /api/histograms/")[0]!.url.searchParams.get("job")).toBe("7");
  });

  it("says why each panel is empty for a CPU-only trace", async () => {
    const noGpu = "no GPU in this profile";
    const kernels = { total_ns: 0, total_count: 0, empty_reason: "no GPU kernels", top: [] };
    serve(
      makeDashboard({
        gpu_active: { source: null, active_points: 0, idle_points: 0, empty_reason: noGpu },
        gpu_utilization: { source: null, empty_reason: noGpu, series: [] },
        kernel_time: kernels,
        kernel_count: kernels,
        steps: { empty_reason: "no steps annotated", durations_ns: [], names: [] },
        precision: { empty_reason: "no GPU kernels", rows: [] },
        gpu_activity: { empty_reason: noGpu, rows: [] },
        memory_ops: { empty_reason: "no GPU memory operations", rows: [] },
        annotation_names: [],
      }),
    );
    renderApp("/dashboard");

    await findPanel("GPU active time");
    const reasons = {
      "GPU active time": "No GPU in this profile.",
      "GPU utilisation over time": "No GPU in this profile.",
      "CPU active time": "No CPU samples in an imported trace.",
      "Time spent by all GPU kernels": "No GPU kernels.",
      "Launch counts of the top 15 GPU kernels": "No GPU kernels.",
      "Step time distribution": "No steps annotated.",
      "Kernel precision distribution": "No GPU kernels.",
      "GPU activity distribution": "No GPU in this profile.",
      "GPU memory operations distribution": "No GPU memory operations.",
      "Create new histogram": "No custom annotations in this profile.",
    };
    for (const [title, reason] of Object.entries(reasons)) {
      expect(within(panel(title)).getByText(reason)).toBeInTheDocument();
    }
    expect(within(panel("Time spent by all GPU kernels")).queryByRole("spinbutton")).toBeNull();
  });

  it("names the ranks that sent nothing above the figures, as Cluster and Info do", async () => {
    serve(makeDashboard({}), [], [0]);
    renderApp("/dashboard");

    const note = await screen.findByTestId("missing-ranks");
    expect(note).toHaveTextContent(
      "1 of 2 ranks · rank 1 missing. Figures over all ranks describe only the ranks that arrived.",
    );
    await findPanel("GPU active time");
  });

  it("shows no rank note when every rank arrived", async () => {
    serve(makeDashboard({}));
    renderApp("/dashboard");

    await findPanel("GPU active time");
    expect(screen.queryByTestId("missing-ranks")).toBeNull();
  });
});
