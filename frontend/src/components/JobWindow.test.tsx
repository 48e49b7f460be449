import { QueryClientProvider } from "@tanstack/react-query";
import { render, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { TrainingJob } from "../api/types";
import { createQueryClient } from "../queryClient";
import { alice, bob, FakeApi, makeJob } from "../test/fakeApi";
import { WindowSwitch } from "./JobWindow";

function renderSwitch(job: TrainingJob) {
  render(
    <QueryClientProvider client={createQueryClient()}>
      <WindowSwitch job={job} />
    </QueryClientProvider>,
  );
}

describe("WindowSwitch", () => {
  it("lets a teammate switch their own window and says it differs from the owner's", async () => {
    const job = makeJob({ id: 7, name: "resnet", owner: "alice", window: "whole_trace" });
    const api = new FakeApi()
      .on("GET /api/auth/me/", { status: 200, body: bob })
      .on("PATCH /api/jobs/7/", { status: 200, body: { ...job, window: "complete_steps" } });
    renderSwitch(job);

    const select = screen.getByLabelText("Window");
    await waitFor(() =>
      expect(select.closest("label")).toHaveAttribute(
        "title",
        expect.stringContaining("yours only"),
      ),
    );
    expect(select).toBeEnabled();
    expect(screen.queryByTestId("window-own")).not.toBeInTheDocument();
    await userEvent.selectOptions(select, "complete_steps");
    await waitFor(() => expect(api.sent("PATCH /api/jobs/7/")).toHaveLength(1));
    expect(api.sent("PATCH /api/jobs/7/")[0]!.body).toEqual({ window: "complete_steps" });
  });

  it("names the owner's default beside a teammate's own window", async () => {
    new FakeApi().on("GET /api/auth/me/", { status: 200, body: bob });
    renderSwitch(makeJob({ id: 7, name: "resnet", owner: "alice", window: "complete_steps" }));
    expect(await screen.findByTestId("window-own")).toHaveTextContent(
      "Your own window: the owner (alice) shows this job in the whole trace.",
    );
    expect(screen.getByLabelText("Window")).toHaveValue("complete_steps");
  });

  it("tells the owner their choice is the team's default", async () => {
    new FakeApi().on("GET /api/auth/me/", { status: 200, body: alice });
    renderSwitch(makeJob({ id: 7, name: "resnet", owner: "alice", window: "whole_trace" }));
    await waitFor(() =>
      expect(screen.getByLabelText("Window").closest("label")).toHaveAttribute(
        "title",
        expect.stringContaining("also the default"),
      ),
    );
    expect(screen.queryByTestId("window-own")).not.toBeInTheDocument();
  });
});
