import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { ApiToken } from "../../api/types";
import { alice, FakeApi } from "../../test/fakeApi";
import { renderApp } from "../../test/renderApp";

const KEY = "5d41402abc4b2a76b9719d911017c592".repeat(2);

const laptop: ApiToken = {
  id: 1,
  name: "laptop",
  prefix: "9944b091",
  created: "2025-06-01T10:00:00Z",
  last_used: null,
  expiry: null,
};

function backend(initial: ApiToken[]) {
  let tokens = [...initial];
  return new FakeApi()
    .on("GET /api/auth/me/", { status: 200, body: alice })
    .on("GET /api/loaded-profile/", { status: 404, body: { detail: "Not found." } })
    .on("GET /api/tokens/", () => ({ status: 200, body: tokens }))
    .on("POST /api/tokens/", async (request) => {
      const body = (await request.json()) as { name: string; expires_in_days: number | null };
      if (tokens.some((t) => t.name === body.name)) {
        return { status: 400, body: { name: [`You already have a token named “${body.name}”.`] } };
      }
      const made = {
        ...laptop,
        id: 2,
        name: body.name,
        prefix: KEY.slice(0, 8),
        expiry: body.expires_in_days ? "2025-07-01T10:00:00Z" : null,
      };
      tokens = [made, ...tokens];
      return { status: 201, body: { ...made, token: KEY } };
    })
    .on("DELETE /api/tokens/2/", () => {
      tokens = tokens.filter((t) => t.id !== 2);
      return { status: 204 };
    });
}

describe("API tokens page", () => {
  it("creates a named token, shows its key once, and fills it into the set-up snippet", async () => {
    const api = backend([laptop]);
    renderApp("/tokens");

    expect(await screen.findByRole("cell", { name: "laptop" })).toBeInTheDocument();
    expect(screen.getByTestId("shell-snippet")).toHaveTextContent(
      "export PROFILER_TOKEN='<your token>'",
    );
    await userEvent.type(screen.getByLabelText("Name"), "gpu-cluster");
    await userEvent.selectOptions(screen.getByLabelText("Expires"), "In 30 days");
    await userEvent.click(screen.getByRole("button", { name: "Create token" }));

    const reveal = await screen.findByRole("region", { name: "New token" });
    expect(within(reveal).getByTestId("new-token")).toHaveTextContent(KEY);
    expect(reveal).toHaveTextContent("Copy it now: you will not see it again.");
    expect(api.sent("POST /api/tokens/")[0]!.body).toEqual({
      name: "gpu-cluster",
      expires_in_days: 30,
    });
    const shell = screen.getByTestId("shell-snippet");
    expect(shell).toHaveTextContent(`export PROFILER_SERVER_URL=${window.location.origin}`);
    expect(shell).toHaveTextContent(`export PROFILER_TOKEN=${KEY}`);
    await waitFor(() => expect(screen.getAllByTestId("token-row")).toHaveLength(2));
    expect(screen.getAllByTestId("token-row")[0]).toHaveTextContent(
      `gpu-cluster${KEY.slice(0, 8)}…`,
    );
    expect(screen.getByLabelText("Name")).toHaveValue("");
  });

  it("shows why a token was refused", async () => {
    backend([laptop]);
    renderApp("/tokens");

    await userEvent.type(await screen.findByLabelText("Name"), "laptop");
    await userEvent.click(screen.getByRole("button", { name: "Create token" }));

    expect(await screen.findByRole("alert")).toHaveTextContent(
      "You already have a token named “laptop”.",
    );
    expect(screen.getByLabelText("Name")).toHaveAttribute("aria-invalid", "true");
    expect(screen.queryByRole("region", { name: "New token" })).not.toBeInTheDocument();
  });

  it("revokes a token only once confirmed, and forgets its key", async () => {
    const api = backend([laptop]);
    renderApp("/tokens");
    await userEvent.type(await screen.findByLabelText("Name"), "ci");
    await userEvent.click(screen.getByRole("button", { name: "Create token" }));
    await screen.findByRole("region", { name: "New token" });

    const row = (await screen.findByRole("cell", { name: "ci" })).closest("tr")!;
    await userEvent.click(within(row).getByRole("button", { name: "Revoke…" }));
    await userEvent.click(within(row).getByRole("button", { name: "Cancel" }));
    expect(api.sent("DELETE /api/tokens/2/")).toHaveLength(0);

    await userEvent.click(within(row).getByRole("button", { name: "Revoke…" }));
    expect(within(row).getByRole("group", { name: "Revoke ci?" })).toHaveTextContent(
      "Anything using it stops at once.",
    );
    await userEvent.click(within(row).getByRole("button", { name: "Revoke" }));

    await waitFor(() => expect(screen.queryByRole("cell", { name: "ci" })).not.toBeInTheDocument());
    expect(api.sent("DELETE /api/tokens/2/")).toHaveLength(1);
    expect(screen.queryByRole("region", { name: "New token" })).not.toBeInTheDocument();
    expect(screen.getByTestId("shell-snippet")).toHaveTextContent("'<your token>'");
  });

  it("says when there are no tokens, and is reached from the header", async () => {
    new FakeApi()
      .on("GET /api/auth/me/", { status: 200, body: alice })
      .on("GET /api/loaded-profile/", { status: 404, body: { detail: "Not found." } })
      .on("GET /api/settings/", {
        status: 200,
        body: { auto_shutdown_enabled: true, auto_shutdown_hours: 2, last_activity_at: null },
      })
      .on("GET /api/tokens/", { status: 200, body: [] });
    const { router } = renderApp("/settings");

    await userEvent.click(await screen.findByRole("link", { name: "API tokens" }));
    expect(router.state.location.pathname).toBe("/tokens");
    expect(
      await screen.findByRole("heading", { name: "You have no API tokens yet" }),
    ).toBeInTheDocument();
  });
});
