import { screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { ProfilePart } from "../../api/types";
import { alice, FakeApi, loadedProfile, makeJob, page } from "../../test/fakeApi";
import { renderApp } from "../../test/renderApp";

const job = makeJob({
  id: 7,
  name: "llama-finetune",
  status: "in_progress",
  ended_at: null,
  hyperparameters: { lr: 0.0003, optimizer: "adamw", schedule: { warmup: 100 } },
  resource_ids: { training_job_arn: "arn:aws:sagemaker:eu-west-1:123:training-job/llama" },
  parts_total: 2,
  parts_done: 1,
  parts_failed: 1,
});

const part = (overrides: Partial<ProfilePart>): ProfilePart => ({
  id: 1,
  job: 7,
  node: "algo-1",
  rank: 0,
  pid: 4242,
  kind: "kineto",
  original_name: "rank0.pt.trace.json.gz",
  size_bytes: 2_400_000,
  sha256: "ab".repeat(32),
  state: "done",
  error: "",
  warning: "",
  progress: 1,
  created_at: "2025-06-01T10:05:00Z",
  updated_at: "2025-06-01T10:06:00Z",
  started_at: null,
  finished_at: null,
  ...overrides,
});

describe("Info page", () => {
  it("shows the loaded job's instance, nodes, framework, hyperparameters and parts", async () => {
    new FakeApi()
      .on("GET /api/auth/me/", { status: 200, body: alice })
      .on("GET /api/loaded-profile/", { status: 200, body: loadedProfile(job) })
      .on("GET /api/jobs/7/", { status: 200, body: job })
      // The real A100 trace's span (as a JSON number: to 256 ns): 2024-04-04 01:51:35.4 UTC on.
      .on("GET /api/jobs/7/summary/", {
        status: 200,
        body: {
          job: 7,
          event_counts: {},
          n_events: 45_422,
          start_ns: 1_712_195_495_406_752_800,
          end_ns: 1_712_195_496_004_644_000,
          span_ns: 597_891_386,
          recorded_start_ns: 1_712_195_495_406_752_800,
          ranks: [0, 1],
          world_size: 2,
          missing_ranks: [],
          nodes: ["algo-1", "algo-2"],
          parts: { pending: 0, processing: 0, done: 1, failed: 1, total: 2 },
          progress: 1,
          read_warnings: [],
        },
      })
      .on("GET /api/jobs/7/parts/", {
        status: 200,
        body: page([
          part({ started_at: "2025-06-01T10:05:01.250Z", finished_at: "2025-06-01T10:05:21.950Z" }),
          part({
            id: 2,
            node: "algo-2",
            rank: 1,
            state: "failed",
            original_name: "rank1.json",
            error: "Not a Chrome trace: no traceEvents array.",
          }),
        ]),
      });
    renderApp("/info");

    const compute = (await screen.findByRole("heading", { name: "Compute" })).closest("section")!;
    expect(within(compute).getByText("ml.p4d.24xlarge")).toBeInTheDocument();
    expect(within(compute).getByText("algo-1, algo-2")).toBeInTheDocument();
    expect(within(compute).getByText("8")).toBeInTheDocument();
    expect(screen.getByText("PyTorch")).toBeInTheDocument();
    expect(screen.getByText("2.13.0")).toBeInTheDocument();
    expect(screen.getByText("adamw")).toBeInTheDocument();
    expect(screen.getByText('{"warmup":100}')).toBeInTheDocument();
    expect(
      screen.getByText("arn:aws:sagemaker:eu-west-1:123:training-job/llama"),
    ).toBeInTheDocument();
    expect(screen.getByText("partial")).toBeInTheDocument();
    // When the events were recorded, and their span (the Dashboard's profile span).
    const run = screen.getByRole("heading", { name: "Run" }).closest("section")!;
    expect(
      await within(run).findByText("Apr 4, 2024, 01:51 AM, span 0.597891 s"),
    ).toBeInTheDocument();

    const parsed = (await screen.findByText("rank0.pt.trace.json.gz")).closest("tr")!;
    expect(within(parsed).getByText("20.7 s")).toBeInTheDocument();
    const parts = (await screen.findByText("rank1.json")).closest("tr")!;
    expect(within(parts).getByText("Failed")).toBeInTheDocument();
    // Refused before any worker took it: no parse time.
    expect(within(parts).getByText("–")).toBeInTheDocument();
    expect(
      within(parts).getByText("Not a Chrome trace: no traceEvents array."),
    ).toBeInTheDocument();
  });

  it("warns that a profile with unrecognised events may be incomplete", async () => {
    const warned = makeJob({
      id: 8,
      name: "old-trace",
      read_warnings: [
        {
          part: 3,
          rank: 0,
          file: "old.json",
          message:
            "9,456 events look like GPU work but are of a kind this server does not recognise",
        },
      ],
    });
    new FakeApi()
      .on("GET /api/auth/me/", { status: 200, body: alice })
      .on("GET /api/loaded-profile/", { status: 200, body: loadedProfile(warned) })
      .on("GET /api/jobs/8/", { status: 200, body: warned })
      .on("GET /api/jobs/8/parts/", { status: 200, body: page([]) });
    renderApp("/info");

    const alert = await screen.findByRole("alert");
    expect(alert).toHaveTextContent("This profile may be incomplete.");
    expect(alert).toHaveTextContent("old.json (rank 0): 9,456 events look like GPU work");
  });

  it("does not date a trace whose clock does not say when it ran", async () => {
    const relative = makeJob({ id: 9, name: "relative-trace" });
    new FakeApi()
      .on("GET /api/auth/me/", { status: 200, body: alice })
      .on("GET /api/loaded-profile/", { status: 200, body: loadedProfile(relative) })
      .on("GET /api/jobs/9/", { status: 200, body: relative })
      .on("GET /api/jobs/9/parts/", { status: 200, body: page([]) })
      // Times from 0: a trace aligned on its own start (no baseTimeNanoseconds, no unix times).
      .on("GET /api/jobs/9/summary/", {
        status: 200,
        body: {
          job: 9,
          event_counts: {},
          n_events: 10,
          start_ns: 0,
          end_ns: 597_891_386,
          span_ns: 597_891_386,
          recorded_start_ns: null,
          ranks: [0],
          world_size: null,
          missing_ranks: [],
          nodes: ["algo-1"],
          parts: { pending: 0, processing: 0, done: 1, failed: 0, total: 1 },
          progress: 1,
          read_warnings: [],
        },
      });
    renderApp("/info");

    const run = (await screen.findByRole("heading", { name: "Run" })).closest("section")!;
    expect(
      await within(run).findByText("span 0.597891 s (its clock does not say when)"),
    ).toBeInTheDocument();
    expect(within(run).queryByText(/1970/)).toBeNull();
  });
});
