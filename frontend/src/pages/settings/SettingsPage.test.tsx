import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { admin, alice, defaultSettings, diskUse, FakeApi } from "../../test/fakeApi";
import { renderApp } from "../../test/renderApp";
import { shutdownSummary } from "./summary";

const emptyPreview = {
  retention_raw_days: null,
  retention_jobs_days: null,
  jobs: [],
  raw_files: [],
  total_bytes: 0,
};

function backend(user = admin) {
  let stored = { ...defaultSettings };
  return new FakeApi()
    .on("GET /api/auth/me/", { status: 200, body: user })
    .on("GET /api/loaded-profile/", { status: 404, body: { detail: "Not found." } })
    .on("GET /api/settings/", () => ({ status: 200, body: stored }))
    .on("GET /api/settings/disk-use/", { status: 200, body: diskUse })
    .on("GET /api/settings/retention/preview/", { status: 200, body: emptyPreview })
    .on("PUT /api/settings/", async (request) => {
      const body = (await request.json()) as typeof stored;
      if (body.auto_shutdown_hours !== undefined && (body.auto_shutdown_hours ?? 0) < 0.05) {
        return {
          status: 400,
          body: {
            auto_shutdown_hours: ["The threshold must be more than 0 hours (at least 0.05 h)."],
          },
        };
      }
      stored = { ...stored, ...body };
      return { status: 200, body: stored };
    });
}

describe("shutdownSummary", () => {
  it("states the threshold and the last activity", () => {
    const now = Date.parse("2025-06-02T09:45:00Z");
    expect(shutdownSummary(defaultSettings, now)).toMatch(
      /^Shuts down after 2 h idle; last activity .+ \(45 min ago\)\.$/,
    );
    expect(shutdownSummary({ ...defaultSettings, auto_shutdown_enabled: false }, now)).toMatch(
      /^Auto-shutdown is off; last activity/,
    );
  });
});

describe("Settings page", () => {
  it("lets an admin change the threshold and shows the server's validation message", async () => {
    const api = backend(admin);
    renderApp("/settings");

    const hours = await screen.findByLabelText("Auto-shutdown threshold (hours)");
    expect(hours).toHaveValue(2);
    await userEvent.clear(hours);
    await userEvent.type(hours, "0");
    await userEvent.click(screen.getByRole("button", { name: "Save" }));
    expect(await screen.findByRole("alert")).toHaveTextContent(
      "The threshold must be more than 0 hours",
    );
    expect(hours).toHaveAttribute("aria-invalid", "true");

    await userEvent.clear(hours);
    await userEvent.type(hours, "4.5");
    await userEvent.click(screen.getByLabelText("Enable application auto-shutdown"));
    await userEvent.click(screen.getByRole("button", { name: "Save" }));

    expect(await screen.findByText("Saved.")).toBeInTheDocument();
    expect(api.sent("PUT /api/settings/").at(-1)!.body).toEqual({
      auto_shutdown_enabled: false,
      auto_shutdown_hours: 4.5,
    });
    await waitFor(() =>
      expect(screen.getByTestId("shutdown-summary")).toHaveTextContent(/^Auto-shutdown is off/),
    );
    expect(screen.queryByRole("alert")).not.toBeInTheDocument();
  });

  it("asks for a number before sending an empty threshold", async () => {
    const api = backend(admin);
    renderApp("/settings");

    await userEvent.clear(await screen.findByLabelText("Auto-shutdown threshold (hours)"));
    await userEvent.click(screen.getByRole("button", { name: "Save" }));

    expect(await screen.findByRole("alert")).toHaveTextContent(
      "Enter the threshold as a number of hours",
    );
    expect(api.sent("PUT /api/settings/")).toHaveLength(0);
  });

  it("shows settings read-only to people who are not admins", async () => {
    const api = backend(alice);
    renderApp("/settings");

    expect(await screen.findByTestId("shutdown-summary")).toHaveTextContent(
      "Shuts down after 2 h idle; last activity",
    );
    expect(screen.getByText("Only administrators can change these settings.")).toBeInTheDocument();
    expect(screen.getByLabelText("Enable application auto-shutdown")).toBeDisabled();
    expect(screen.getByLabelText("Auto-shutdown threshold (hours)")).toBeDisabled();
    expect(screen.queryByRole("button", { name: "Save" })).not.toBeInTheDocument();
    expect(api.sent("PUT /api/settings/")).toHaveLength(0);
  });

  it("lets an admin preview and save retention, and shows the disk use", async () => {
    const api = backend(admin).on("GET /api/settings/retention/preview/", (_request, url) => {
      const jobsDays = url.searchParams.get("retention_jobs_days");
      return {
        status: 200,
        body: {
          ...emptyPreview,
          retention_jobs_days: jobsDays ? Number(jobsDays) : null,
          jobs: jobsDays
            ? [
                {
                  id: 7,
                  name: "old-sweep",
                  owner: "bob",
                  last_activity_at: "2024-01-02T10:00:00Z",
                  bytes: 2_500_000,
                },
              ]
            : [],
          total_bytes: jobsDays ? 2_500_000 : 0,
        },
      };
    });
    renderApp("/settings");

    expect(await screen.findByTestId("disk-use")).toHaveTextContent("Total3.8 GB");
    expect(await screen.findByTestId("retention-preview")).toHaveTextContent(
      "Nothing: no data is old enough.",
    );
    await userEvent.type(screen.getByLabelText("Delete inactive jobs after (days)"), "90");
    const preview = await screen.findByRole("table", { name: "Jobs to delete" });
    expect(preview).toHaveTextContent("old-sweep");
    expect(screen.getByTestId("retention-preview")).toHaveTextContent(
      "1 job and 0 raw files, freeing 2.5 MB.",
    );
    expect(api.sent("GET /api/settings/retention/preview/").at(-1)!.url.search).toBe(
      "?retention_raw_days=&retention_jobs_days=90",
    );

    await userEvent.click(screen.getByRole("button", { name: "Save retention" }));
    await waitFor(() =>
      expect(api.sent("PUT /api/settings/").at(-1)!.body).toEqual({
        retention_raw_days: null,
        retention_jobs_days: 90,
      }),
    );
    expect(await screen.findByText("Saved.")).toBeInTheDocument();

    await userEvent.type(screen.getByLabelText("Delete raw uploads after (days)"), "1.5");
    await userEvent.click(screen.getByRole("button", { name: "Save retention" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("Enter a whole number of days");
    expect(api.sent("PUT /api/settings/")).toHaveLength(1);
  });

  it("shows retention to admins only, and the disk use to everyone", async () => {
    const api = backend(alice);
    renderApp("/settings");
    expect(await screen.findByTestId("disk-use")).toHaveTextContent(
      "Free on the disk120 GB of 500 GB",
    );
    expect(screen.queryByRole("heading", { name: "Retention" })).not.toBeInTheDocument();
    expect(api.sent("GET /api/settings/retention/preview/")).toHaveLength(0);
  });

  it("names the bucket and this server's cache when profiles are kept in object storage", async () => {
    backend(alice).on("GET /api/settings/disk-use/", {
      status: 200,
      body: {
        ...diskUse,
        where: "s3://team-profiles/prod",
        free_bytes: null,
        capacity_bytes: null,
        cache_bytes: 4_000_000_000,
      },
    });
    renderApp("/settings");
    const use = await screen.findByTestId("disk-use");
    expect(use).toHaveTextContent("Kept ins3://team-profiles/prod");
    expect(use).toHaveTextContent("Cached on this server4.0 GB");
    expect(use).not.toHaveTextContent("Free on the disk");
  });
});
