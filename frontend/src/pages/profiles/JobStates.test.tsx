import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { User } from "../../api/types";
import { alice, bob, FakeApi, makeJob, page } from "../../test/fakeApi";
import { renderApp } from "../../test/renderApp";

const lone = makeJob({
  id: 1,
  name: "lone",
  state: "failed",
  parts_total: 1,
  parts_done: 0,
  parts_failed: 1,
});
const some = makeJob({
  id: 2,
  name: "some",
  state: "partial",
  parts_total: 5,
  parts_done: 3,
  parts_failed: 2,
});
const cut = makeJob({
  id: 3,
  name: "cut",
  status: "in_progress",
  state: "interrupted",
  uploads_interrupted: 1,
  interrupted_received_bytes: 6_000_000,
  interrupted_size_bytes: 10_000_000,
});

function backend(user: User) {
  return new FakeApi()
    .on("GET /api/auth/me/", { status: 200, body: user })
    .on("GET /api/jobs/", { status: 200, body: page([lone, some, cut]) })
    .on("GET /api/tags/", { status: 200, body: [] })
    .on("GET /api/loaded-profile/", { status: 204 });
}

const row = async (name: string) => (await screen.findByText(name)).closest("tr")!;

describe("Job states in the catalog", () => {
  it("shows failed, partly failed and interrupted jobs with what their state rests on", async () => {
    backend(alice);
    renderApp("/profiles");
    expect(within(await row("lone")).getByText("Failed")).toBeInTheDocument();
    expect(within(await row("lone")).getByText("1 of 1 part failed")).toBeInTheDocument();
    expect(within(await row("some")).getByText("Partly failed")).toBeInTheDocument();
    expect(within(await row("some")).getByText("2 of 5 parts failed")).toBeInTheDocument();
    const interrupted = await row("cut");
    expect(within(interrupted).getByText("Upload interrupted")).toBeInTheDocument();
    expect(
      within(interrupted).getByText("1 upload stopped: 6.0 MB of 10.0 MB arrived"),
    ).toBeInTheDocument();
  });

  it("lets the owner finish an interrupted upload at once, and no one else", async () => {
    const api = backend(alice).on("POST /api/jobs/3/uploads/finish/", {
      status: 200,
      body: { stored: 1, dropped: 0 },
    });
    renderApp("/profiles");
    await userEvent.click(await screen.findByRole("button", { name: "Finish the upload of cut" }));
    await waitFor(() => expect(api.sent("POST /api/jobs/3/uploads/finish/")).toHaveLength(1));
    expect(screen.queryByRole("button", { name: /upload of (lone|some)/ })).not.toBeInTheDocument();
  });

  it("abandons an interrupted upload only once the dialog naming what goes is confirmed", async () => {
    const api = backend(alice).on("POST /api/jobs/3/uploads/abandon/", {
      status: 200,
      body: { stored: 0, dropped: 1 },
    });
    renderApp("/profiles");
    await userEvent.click(await screen.findByRole("button", { name: "Abandon the upload of cut" }));
    let dialog = screen.getByRole("dialog", { name: "Abandon the upload of cut?" });
    expect(dialog).toHaveTextContent(
      "This deletes what arrived of the 1 stopped upload of cut (6.0 MB of 10.0 MB)",
    );
    await userEvent.click(within(dialog).getByRole("button", { name: "Cancel" }));
    expect(screen.queryByRole("dialog")).not.toBeInTheDocument();
    expect(api.sent("POST /api/jobs/3/uploads/abandon/")).toHaveLength(0);

    await userEvent.click(screen.getByRole("button", { name: "Abandon the upload of cut" }));
    dialog = screen.getByRole("dialog", { name: "Abandon the upload of cut?" });
    await userEvent.click(within(dialog).getByRole("button", { name: "Abandon upload" }));
    await waitFor(() => expect(screen.queryByRole("dialog")).not.toBeInTheDocument());
    expect(api.sent("POST /api/jobs/3/uploads/abandon/")).toHaveLength(1);
  });

  it("says why an abandon was refused, in the dialog", async () => {
    backend(alice).on("POST /api/jobs/3/uploads/abandon/", {
      status: 403,
      body: { detail: "Only the job's owner or a staff member can change it.", code: "not_owner" },
    });
    renderApp("/profiles");
    await userEvent.click(await screen.findByRole("button", { name: "Abandon the upload of cut" }));
    const dialog = screen.getByRole("dialog", { name: "Abandon the upload of cut?" });
    await userEvent.click(within(dialog).getByRole("button", { name: "Abandon upload" }));
    expect(await within(dialog).findByRole("alert")).toHaveTextContent(
      "Only the job's owner or a staff member can change it.",
    );
  });

  it("offers no finish or abandon on another's job", async () => {
    backend(bob);
    renderApp("/profiles");
    await row("cut");
    expect(screen.queryByRole("button", { name: /upload of cut/ })).not.toBeInTheDocument();
  });

  it("filters on the states, failed among them", async () => {
    const api = backend(alice);
    renderApp("/profiles");
    await row("lone");
    await userEvent.click(screen.getByRole("checkbox", { name: "Failed" }));
    await waitFor(() =>
      expect(
        api
          .sent("GET /api/jobs/")
          .some((r) => r.url.searchParams.getAll("status").includes("failed")),
      ).toBe(true),
    );
    expect(screen.getByRole("checkbox", { name: "Upload interrupted" })).toBeInTheDocument();
  });
});
