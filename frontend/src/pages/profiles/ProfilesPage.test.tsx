import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { LoadedProfile } from "../../api/types";
import { alice, FakeApi, loadedProfile, makeJob, page } from "../../test/fakeApi";
import { renderApp } from "../../test/renderApp";

const resnet = makeJob({ id: 1, name: "resnet50-baseline" });
const bert = makeJob({
  id: 2,
  name: "bert-large",
  status: "in_progress",
  parts_done: 1,
  parts_total: 3,
});

function backend(initiallyLoaded: LoadedProfile | null = null) {
  let loaded = initiallyLoaded;
  return new FakeApi()
    .on("GET /api/auth/me/", { status: 200, body: alice })
    .on("GET /api/jobs/", { status: 200, body: page([resnet, bert], 120) })
    .on("GET /api/jobs/1/", { status: 200, body: resnet })
    .on("GET /api/jobs/2/", { status: 200, body: bert })
    .on("GET /api/tags/", { status: 200, body: [] })
    .on("GET /api/loaded-profile/", () =>
      loaded ? { status: 200, body: loaded } : { status: 404, body: { detail: "Not found." } },
    )
    .on("PUT /api/loaded-profile/", () => {
      if (loaded) {
        return {
          status: 409,
          body: {
            detail: `“${loaded.job_detail.name}” is already loaded. Unload it first (trash-bin icon), then load another profile.`,
            code: "already_loaded",
          },
        };
      }
      loaded = loadedProfile(resnet);
      return { status: 200, body: loaded };
    })
    .on("DELETE /api/loaded-profile/", () => {
      loaded = null;
      return { status: 204 };
    });
}

describe("Profiles page", () => {
  it("lists jobs with status, size, progress and a partial badge for running jobs", async () => {
    backend();
    renderApp("/profiles");

    const row = (await screen.findByText("bert-large")).closest("tr")!;
    expect(within(row).getByText("In Progress")).toBeInTheDocument();
    expect(within(row).getByText("partial")).toBeInTheDocument();
    expect(within(row).getByText("1/3")).toBeInTheDocument();
    const done = screen.getByText("resnet50-baseline").closest("tr")!;
    expect(within(done).queryByText("partial")).not.toBeInTheDocument();
    expect(within(done).getByText("12.5 MB")).toBeInTheDocument();
    expect(screen.getByText("1–50 of 120")).toBeInTheDocument();
    expect(screen.getByText("Page 1 of 3")).toBeInTheDocument();
  });

  it("sends search, status, date and sort filters to the API", async () => {
    const api = backend();
    renderApp("/profiles");
    await screen.findByText("bert-large");

    await userEvent.type(screen.getByPlaceholderText("Job name contains…"), "bert");
    // Typing is debounced: one request for the finished word, none per keystroke.
    await waitFor(() =>
      expect(api.sent("GET /api/jobs/").at(-1)!.url.searchParams.get("search")).toBe("bert"),
    );
    expect(api.sent("GET /api/jobs/").filter((r) => r.url.searchParams.has("search"))).toHaveLength(
      1,
    );
    await userEvent.click(screen.getByLabelText("Completed"));
    await userEvent.click(screen.getByLabelText("Failed"));
    fireEvent.change(screen.getByLabelText("Created from"), { target: { value: "2025-06-01" } });
    fireEvent.change(screen.getByLabelText("to"), { target: { value: "2025-06-30" } });
    await userEvent.click(screen.getByRole("button", { name: /Name/ }));
    await userEvent.click(screen.getByRole("button", { name: "Next" }));

    await waitFor(() => {
      const last = api.sent("GET /api/jobs/").at(-1)!.url.searchParams;
      expect(last.get("search")).toBe("bert");
      expect(last.getAll("status")).toEqual(["completed", "failed"]);
      expect(last.get("created_after")).toBe(new Date(2025, 5, 1).toISOString());
      expect(last.get("created_before")).toBe(new Date(2025, 5, 30, 23, 59, 59, 999).toISOString());
      expect(last.get("ordering")).toBe("name");
      expect(last.get("page")).toBe("2");
    });
  });

  it("loads the selected job, refuses a second one with the server's message, and unloads", async () => {
    const api = backend();
    renderApp("/profiles");
    const loadButton = await screen.findByRole("button", { name: "Load" });
    expect(loadButton).toBeDisabled();

    await userEvent.click(await screen.findByLabelText("Select resnet50-baseline"));
    await userEvent.click(loadButton);
    const loadedRow = await screen.findByTestId("loaded-profile");
    expect(within(loadedRow).getByText("resnet50-baseline")).toBeInTheDocument();
    expect(api.sent("PUT /api/loaded-profile/")[0]!.body).toEqual({ job: 1 });

    await userEvent.click(screen.getByLabelText("Select bert-large"));
    await userEvent.click(screen.getByRole("button", { name: "Load" }));
    expect(await screen.findByRole("alert")).toHaveTextContent(
      "“resnet50-baseline” is already loaded. Unload it first",
    );

    await userEvent.click(screen.getByRole("button", { name: "Unload resnet50-baseline" }));
    await waitFor(() => expect(screen.queryByTestId("loaded-profile")).not.toBeInTheDocument());
    expect(screen.queryByRole("alert")).not.toBeInTheDocument();
    expect(api.sent("DELETE /api/loaded-profile/")).toHaveLength(1);
  });

  it("offers to unload the loaded job and load the refused one in one action, then its dashboard", async () => {
    const api = backend(loadedProfile(resnet));
    let refused = true;
    api.on("PUT /api/loaded-profile/", async (request) => {
      if (refused) {
        refused = false;
        return {
          status: 409,
          body: {
            detail: "“resnet50-baseline” is already loaded. Unload it first.",
            code: "already_loaded",
          },
        };
      }
      const { job } = (await request.json()) as { job: number };
      return { status: 200, body: loadedProfile(job === 2 ? bert : resnet) };
    });
    renderApp("/profiles");

    await userEvent.click(await screen.findByLabelText("Select bert-large"));
    await userEvent.click(screen.getByRole("button", { name: "Load" }));
    await userEvent.click(
      await screen.findByRole("button", { name: "Unload resnet50-baseline and load bert-large" }),
    );

    const status = await screen.findByText(/Loaded/, { selector: "p[role=status]" });
    expect(status).toHaveTextContent("Loaded bert-large. Open its dashboard");
    expect(within(status).getByRole("link", { name: "Open its dashboard" })).toHaveAttribute(
      "href",
      "/jobs/2/dashboard",
    );
    expect(api.sent("DELETE /api/loaded-profile/")).toHaveLength(1);
    expect(api.sent("PUT /api/loaded-profile/").map((r) => r.body)).toEqual([
      { job: 2 },
      { job: 2 },
    ]);
  });

  it("opens the dashboard when the loaded job's radio is chosen", async () => {
    backend(loadedProfile(bert));
    const { router } = renderApp("/profiles");

    const radio = await screen.findByLabelText("Open the dashboard for bert-large");
    const loadedRow = await screen.findByTestId("loaded-profile");
    expect(within(loadedRow).getByText("partial")).toBeInTheDocument();
    // Part counts come from the job resource, not from the loaded-profile answer.
    expect(within(loadedRow).getByText("1/3")).toBeInTheDocument();
    await userEvent.click(radio);

    await waitFor(() => expect(router.state.location.pathname).toBe("/jobs/2/dashboard"));
    expect(await screen.findByRole("heading", { name: "Dashboard" })).toBeInTheDocument();
  });

  it("explains an empty catalog and an empty filter result differently", async () => {
    new FakeApi()
      .on("GET /api/auth/me/", { status: 200, body: alice })
      .on("GET /api/jobs/", { status: 200, body: page([]) })
      .on("GET /api/tags/", { status: 200, body: [] })
      .on("GET /api/loaded-profile/", { status: 404, body: { detail: "Not found." } })
      .on("GET /api/demo/", { status: 200, body: { available: true, reason: "", job_name: "" } });
    renderApp("/profiles");
    expect(await screen.findByText("No training jobs yet")).toBeInTheDocument();

    await userEvent.click(screen.getByLabelText("Stopped"));
    expect(await screen.findByText("No jobs match these filters")).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Create a demo job" })).not.toBeInTheDocument();
  });

  it("offers a demo job on an empty server", async () => {
    const api = new FakeApi()
      .on("GET /api/auth/me/", { status: 200, body: alice })
      .on("GET /api/jobs/", { status: 200, body: page([]) })
      .on("GET /api/tags/", { status: 200, body: [] })
      .on("GET /api/loaded-profile/", { status: 404, body: { detail: "Not found." } })
      .on("GET /api/demo/", { status: 200, body: { available: true, reason: "", job_name: "" } })
      .on("POST /api/demo/", {
        status: 202,
        body: { available: true, reason: "", job_name: "demo-cnn-20250601-100000" },
      });
    renderApp("/profiles");

    await userEvent.click(await screen.findByRole("button", { name: "Create a demo job" }));

    expect(await screen.findByRole("status")).toHaveTextContent(
      "The demo job demo-cnn-20250601-100000 is training on this server's CPU.",
    );
    expect(api.sent("POST /api/demo/")).toHaveLength(1);
  });

  it("says why no demo job can be made", async () => {
    new FakeApi()
      .on("GET /api/auth/me/", { status: 200, body: alice })
      .on("GET /api/jobs/", { status: 200, body: page([]) })
      .on("GET /api/tags/", { status: 200, body: [] })
      .on("GET /api/loaded-profile/", { status: 404, body: { detail: "Not found." } })
      .on("GET /api/demo/", {
        status: 200,
        body: {
          available: false,
          reason: "PyTorch is not installed on this server.",
          job_name: "",
        },
      });
    renderApp("/profiles");

    expect(
      await screen.findByText(
        "A demo job cannot be created here: PyTorch is not installed on this server.",
      ),
    ).toBeInTheDocument();
  });
});
