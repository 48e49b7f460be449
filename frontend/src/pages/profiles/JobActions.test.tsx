import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { User } from "../../api/types";
import { admin, alice, FakeApi, makeJob, page } from "../../test/fakeApi";
import { renderApp } from "../../test/renderApp";

const mine = makeJob({
  id: 1,
  name: "resnet50-baseline",
  owner: "alice",
  tags: ["vision"],
  notes: "Baseline run.",
});
const theirs = makeJob({ id: 2, name: "gpt2-small", owner: "bob", tags: ["nlp", "a100"] });

function backend(user: User) {
  return new FakeApi()
    .on("GET /api/auth/me/", { status: 200, body: user })
    .on("GET /api/jobs/", { status: 200, body: page([mine, theirs]) })
    .on("GET /api/tags/", {
      status: 200,
      body: [
        { tag: "nlp", jobs: 1 },
        { tag: "a100", jobs: 1 },
        { tag: "vision", jobs: 1 },
      ],
    })
    .on("GET /api/loaded-profile/", { status: 404, body: { detail: "Not found." } });
}

const row = async (name: string) => (await screen.findByText(name)).closest("tr")!;

describe("Job ownership on the Profiles page", () => {
  it("shows each job's owner, tags and notes, and actions only on the user's own jobs", async () => {
    backend(alice);
    renderApp("/profiles");

    const own = await row("resnet50-baseline");
    const other = await row("gpt2-small");
    expect(within(other).getByText("bob")).toBeInTheDocument();
    expect(within(other).getByRole("button", { name: "nlp" })).toBeInTheDocument();
    expect(within(own).getByText("Baseline run.")).toBeInTheDocument();
    expect(within(own).getByRole("button", { name: "Edit resnet50-baseline" })).toBeInTheDocument();
    expect(
      within(own).getByRole("button", { name: "Delete resnet50-baseline" }),
    ).toBeInTheDocument();
    expect(within(other).queryByRole("button", { name: /Edit|Delete/ })).not.toBeInTheDocument();
  });

  it("gives staff the actions on every job", async () => {
    backend(admin);
    renderApp("/profiles");
    expect(await screen.findByRole("button", { name: "Edit gpt2-small" })).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Delete gpt2-small" })).toBeInTheDocument();
  });

  it("renames a job and edits its tags and notes, showing the server's refusals", async () => {
    const api = backend(alice).on("PATCH /api/jobs/1/", async (request) => {
      const body = (await request.json()) as { name: string };
      return body.name === "gpt2-small"
        ? { status: 400, body: { name: ["training job with this name already exists."] } }
        : { status: 200, body: { ...mine, ...body } };
    });
    renderApp("/profiles");
    await userEvent.click(await screen.findByRole("button", { name: "Edit resnet50-baseline" }));
    const dialog = screen.getByRole("dialog", { name: "Edit resnet50-baseline" });
    const name = within(dialog).getByLabelText("Name");
    const tags = within(dialog).getByLabelText("Tags");
    expect(tags).toHaveValue("vision");

    await userEvent.clear(tags);
    await userEvent.type(tags, "vision, lr=0.1");
    await userEvent.click(within(dialog).getByRole("button", { name: "Save changes" }));
    expect(await within(dialog).findByRole("alert")).toHaveTextContent("“lr=0.1” is not a tag");
    expect(api.sent("PATCH /api/jobs/1/")).toHaveLength(0);

    await userEvent.clear(tags);
    await userEvent.type(tags, "vision, lr:0.1 a100");
    await userEvent.clear(name);
    await userEvent.type(name, "gpt2-small");
    await userEvent.click(within(dialog).getByRole("button", { name: "Save changes" }));
    expect(await within(dialog).findByRole("alert")).toHaveTextContent(
      "training job with this name already exists.",
    );

    await userEvent.clear(name);
    await userEvent.type(name, "resnet50-lr-sweep");
    await userEvent.type(within(dialog).getByLabelText("Notes"), " LR 0.1 diverges.");
    await userEvent.click(within(dialog).getByRole("button", { name: "Save changes" }));
    await waitFor(() => expect(screen.queryByRole("dialog")).not.toBeInTheDocument());
    expect(api.sent("PATCH /api/jobs/1/").at(-1)!.body).toEqual({
      name: "resnet50-lr-sweep",
      notes: "Baseline run. LR 0.1 diverges.",
      tags: ["vision", "lr:0.1", "a100"],
    });
  });

  it("deletes a job only once the dialog naming it and its size is confirmed", async () => {
    const api = backend(alice).on("DELETE /api/jobs/1/", { status: 204 });
    renderApp("/profiles");

    await userEvent.click(await screen.findByRole("button", { name: "Delete resnet50-baseline" }));
    let dialog = screen.getByRole("dialog", { name: "Delete resnet50-baseline?" });
    expect(dialog).toHaveTextContent(
      "This deletes the job resnet50-baseline for everyone: its 4 uploaded files (12.5 MB)",
    );
    await userEvent.click(within(dialog).getByRole("button", { name: "Cancel" }));
    expect(screen.queryByRole("dialog")).not.toBeInTheDocument();
    expect(api.sent("DELETE /api/jobs/1/")).toHaveLength(0);

    await userEvent.click(screen.getByRole("button", { name: "Delete resnet50-baseline" }));
    dialog = screen.getByRole("dialog", { name: "Delete resnet50-baseline?" });
    await userEvent.click(within(dialog).getByRole("button", { name: "Delete job" }));
    await waitFor(() => expect(screen.queryByRole("dialog")).not.toBeInTheDocument());
    expect(api.sent("DELETE /api/jobs/1/")).toHaveLength(1);
  });

  it("says why a deletion was refused", async () => {
    backend(admin).on("DELETE /api/jobs/2/", {
      status: 403,
      body: { detail: "Only the job's owner or a staff member can change it.", code: "not_owner" },
    });
    renderApp("/profiles");
    await userEvent.click(await screen.findByRole("button", { name: "Delete gpt2-small" }));
    await userEvent.click(screen.getByRole("button", { name: "Delete job" }));
    expect(await screen.findByRole("alert")).toHaveTextContent(
      "Only the job's owner or a staff member can change it.",
    );
  });

  it("filters to my jobs and to tags, keeping both in the URL", async () => {
    const api = backend(alice);
    const { router } = renderApp("/profiles");
    const last = () => api.sent("GET /api/jobs/").at(-1)!.url.searchParams;

    await userEvent.selectOptions(await screen.findByLabelText("Filter by tag"), "nlp");
    await waitFor(() => expect(last().getAll("tag")).toEqual(["nlp"]));
    // A tag in a row adds to the filter.
    await userEvent.click(within(await row("gpt2-small")).getByRole("button", { name: "a100" }));
    await waitFor(() => expect(last().getAll("tag")).toEqual(["nlp", "a100"]));
    await userEvent.click(screen.getByLabelText("Mine"));
    await waitFor(() => expect(last().get("mine")).toBe("true"));
    expect(router.state.location.search).toBe("?mine=1&tag=nlp&tag=a100");

    await userEvent.click(screen.getByRole("button", { name: "Remove the tag filter nlp" }));
    await waitFor(() => expect(last().getAll("tag")).toEqual(["a100"]));
    await userEvent.click(screen.getByRole("button", { name: "Clear filters" }));
    await waitFor(() => expect(router.state.location.search).toBe(""));
  });
});
