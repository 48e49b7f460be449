import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { TrainingJob, User } from "../../api/types";
import { alice, bob, FakeApi, loadedProfile, makeJob, page } from "../../test/fakeApi";
import { renderApp } from "../../test/renderApp";

const SILENT =
  "ended without a final status: nothing received for 30 min after 2025-06-01 10:42 UTC";

function showInfo(job: TrainingJob, user: User) {
  const api = new FakeApi()
    .on("GET /api/auth/me/", { status: 200, body: user })
    .on("GET /api/loaded-profile/", { status: 200, body: loadedProfile(job) })
    .on("GET /api/jobs/12/", { status: 200, body: job })
    .on("GET /api/jobs/12/parts/", { status: 200, body: page([]) })
    .on("PATCH /api/jobs/12/", async (request) => ({
      status: 200,
      body: { ...job, ...((await request.json()) as object) },
    }));
  renderApp("/info");
  return api;
}

describe("Ending a job on the Info page", () => {
  it("lets the owner end a job still marked as being sent", async () => {
    const job = makeJob({ id: 12, name: "killed", status: "in_progress", owner: "alice" });
    const api = showInfo(job, alice);
    await userEvent.click(await screen.findByRole("button", { name: "End job" }));
    expect(api.sent("PATCH /api/jobs/12/").at(-1)!.body).toEqual({ status: "stopped" });
    expect(screen.queryByRole("button", { name: "Reopen" })).not.toBeInTheDocument();
  });

  it("says why the server ended a silent job, and lets its owner reopen it", async () => {
    const job = makeJob({
      id: 12,
      name: "killed",
      status: "stopped",
      owner: "alice",
      end_reason: SILENT,
    });
    const api = showInfo(job, alice);
    const note = await screen.findByRole("note");
    expect(note).toHaveTextContent(`This job ${SILENT}. It was stopped and judged`);
    expect(screen.queryByRole("button", { name: "End job" })).not.toBeInTheDocument();
    await userEvent.click(within(note.parentElement!).getByRole("button", { name: "Reopen" }));
    expect(api.sent("PATCH /api/jobs/12/").at(-1)!.body).toEqual({ status: "in_progress" });
  });

  it("shows a teammate why, without the owner's buttons", async () => {
    const job = makeJob({ id: 12, name: "killed", status: "in_progress", owner: "alice" });
    showInfo(job, bob);
    await screen.findByRole("heading", { name: /killed/ });
    expect(screen.queryByRole("button", { name: "End job" })).not.toBeInTheDocument();
  });
});
