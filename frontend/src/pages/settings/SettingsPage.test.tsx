import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { admin, alice, defaultSettings, FakeApi } from "../../test/fakeApi";
import { renderApp } from "../../test/renderApp";
import { shutdownSummary } from "./summary";

function backend(user = admin) {
  let stored = { ...defaultSettings };
  return new FakeApi()
    .on("GET /api/auth/me/", { status: 200, body: user })
    .on("GET /api/loaded-profile/", { status: 404, body: { detail: "Not found." } })
    .on("GET /api/settings/", () => ({ status: 200, body: stored }))
    .on("PUT /api/settings/", async (request) => {
      const body = (await request.json()) as typeof stored;
      if ((body.auto_shutdown_hours ?? 0) < 0.05) {
        return {
          status: 400,
          body: { auto_shutdown_hours: ["The threshold must be more than 0 hours (at least 0.05 h)."] },
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
    expect(await screen.findByRole("alert")).toHaveTextContent("The threshold must be more than 0 hours");
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

    expect(await screen.findByRole("alert")).toHaveTextContent("Enter the threshold as a number of hours");
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
});
