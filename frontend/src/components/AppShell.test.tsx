import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { TrainingJob } from "../api/types";
import { admin, alice, FakeApi, loadedProfile, makeJob, page } from "../test/fakeApi";
import { renderApp } from "../test/renderApp";

const notAuthenticated = {
  status: 403,
  body: { detail: "Authentication credentials were not provided.", code: "not_authenticated" },
};

describe("app shell and login", () => {
  it("sends anonymous visitors to the login page and back after signing in", async () => {
    const api = new FakeApi()
      .on("GET /api/auth/me/", () => {
        document.cookie = "csrftoken=token-from-django";
        return notAuthenticated;
      })
      .on("POST /api/auth/login/", { status: 200, body: admin })
      .on("GET /api/loaded-profile/", {
        status: 404,
        body: { detail: "Not found.", code: "not_found" },
      })
      .on("GET /api/settings/", {
        status: 200,
        body: { auto_shutdown_enabled: true, auto_shutdown_hours: 2, last_activity_at: null },
      });
    const { router } = renderApp("/settings");

    await screen.findByRole("button", { name: "Sign in" });
    expect(router.state.location.pathname).toBe("/login");
    await userEvent.type(screen.getByLabelText("User name"), "admin");
    await userEvent.type(screen.getByLabelText("Password"), "secret");
    await userEvent.click(screen.getByRole("button", { name: "Sign in" }));

    expect(await screen.findByRole("heading", { name: "Settings" })).toBeInTheDocument();
    expect(router.state.location.pathname).toBe("/settings");
    const [login] = api.sent("POST /api/auth/login/");
    expect(login!.body).toEqual({ username: "admin", password: "secret" });
    expect(login!.headers.get("X-CSRFToken")).toBe("token-from-django");
    expect(screen.getByTestId("current-user")).toHaveTextContent("admin");
    for (const name of ["Profiles", "Dashboard", "Timeline", "Insights", "Info", "Settings"]) {
      expect(screen.getByRole("link", { name })).toBeInTheDocument();
    }
  });

  it("shows the server's message for wrong credentials", async () => {
    new FakeApi().on("GET /api/auth/me/", notAuthenticated).on("POST /api/auth/login/", {
      status: 400,
      body: { detail: ["Wrong user name or password."], code: "invalid" },
    });
    renderApp("/login");

    await userEvent.type(await screen.findByLabelText("User name"), "admin");
    await userEvent.type(screen.getByLabelText("Password"), "nope");
    await userEvent.click(screen.getByRole("button", { name: "Sign in" }));

    expect(await screen.findByRole("alert")).toHaveTextContent("Wrong user name or password.");
  });

  it("logs out and returns to the login page", async () => {
    let signedIn = true;
    const api = new FakeApi()
      .on("GET /api/auth/me/", () => (signedIn ? { status: 200, body: admin } : notAuthenticated))
      .on("POST /api/auth/logout/", () => {
        signedIn = false;
        return { status: 204 };
      })
      .on("GET /api/loaded-profile/", { status: 404, body: { detail: "Not found." } })
      .on("GET /api/jobs/", { status: 200, body: page([]) })
      .on("GET /api/demo/", { status: 200, body: { available: false, reason: "", job_name: "" } });
    const { router } = renderApp("/");

    await screen.findByRole("heading", { name: "Profiles" });
    await userEvent.click(screen.getByRole("button", { name: "Log out" }));

    await screen.findByRole("button", { name: "Sign in" });
    expect(router.state.location.pathname).toBe("/login");
    expect(api.sent("POST /api/auth/logout/")).toHaveLength(1);
  });

  it("says where to start when no profile is loaded", async () => {
    new FakeApi()
      .on("GET /api/auth/me/", { status: 200, body: admin })
      .on("GET /api/loaded-profile/", { status: 404, body: { detail: "Not found." } });
    renderApp("/dashboard");

    expect(await screen.findByRole("heading", { name: "No profile loaded" })).toBeInTheDocument();
    await waitFor(() =>
      expect(screen.getByText("No profile loaded", { selector: "span" })).toBeInTheDocument(),
    );
  });

  describe("a page opened by a link to another job", () => {
    const four = makeJob({ id: 4, name: "job-four" });
    const six = makeJob({ id: 6, name: "job-six" });
    const noTracks = {
      job: 6,
      origin_ns: "0",
      start_ns: "0",
      end_ns: "0",
      n_events: 0,
      parts: [],
      tracks: [],
      steps: [],
    };

    function backend(initially: TrainingJob | null) {
      let loaded = initially;
      return new FakeApi()
        .on("GET /api/auth/me/", { status: 200, body: alice })
        .on("GET /api/loaded-profile/", () =>
          loaded
            ? { status: 200, body: loadedProfile(loaded) }
            : { status: 404, body: { detail: "Not found." } },
        )
        .on("DELETE /api/loaded-profile/", () => {
          loaded = null;
          return { status: 204 };
        })
        .on("PUT /api/loaded-profile/", () => {
          loaded = six;
          return { status: 200, body: loadedProfile(six) };
        })
        .on("GET /api/jobs/4/", { status: 200, body: four })
        .on("GET /api/jobs/6/", { status: 200, body: six })
        .on("GET /api/jobs/4/timeline/tracks/", { status: 200, body: { ...noTracks, job: 4 } })
        .on("GET /api/jobs/6/timeline/tracks/", { status: 200, body: noTracks });
    }

    it("names the job shown, never the loaded one, and offers to load it", async () => {
      const api = backend(four);
      renderApp("/timeline?job=6");

      const header = await screen.findByTestId("topbar-profile");
      await waitFor(() => expect(header).toHaveTextContent("Viewing: job-six not loaded"));
      // The whole name on hover, where a laptop's screen cuts the header short.
      expect(header).toHaveAttribute(
        "title",
        "Viewing job-six, a job that is not your loaded profile",
      );
      expect(header).not.toHaveTextContent("job-four");
      const notice = await screen.findByTestId("not-loaded-notice");
      expect(notice).toHaveTextContent(
        "You are viewing job-six, which is not the loaded profile (job-four is loaded).",
      );
      await userEvent.click(
        within(notice).getByRole("button", { name: "Unload job-four and load job-six" }),
      );

      await waitFor(() => expect(header).toHaveTextContent("Loaded: job-six"));
      expect(header).toHaveAttribute("title", "Loaded: job-six, the profile the data views show");
      expect(screen.queryByTestId("not-loaded-notice")).not.toBeInTheDocument();
      expect(api.sent("DELETE /api/loaded-profile/")).toHaveLength(1);
      expect(api.sent("PUT /api/loaded-profile/")[0]!.body).toEqual({ job: 6 });
    });

    it("offers to load it when nothing is loaded", async () => {
      backend(null);
      renderApp("/timeline?job=6");
      const notice = await screen.findByTestId("not-loaded-notice");
      expect(notice).toHaveTextContent("which is not the loaded profile (no profile is loaded)");
      // The job's name arrives after the notice (first "job 6"): wait for it.
      expect(
        await within(notice).findByRole("button", { name: "Load job-six" }),
      ).toBeInTheDocument();
    });

    it("opens the job its address names, and the menu stays on it", async () => {
      backend(four);
      const { router } = renderApp("/timeline?job=6");
      // An old link moves to the job's address.
      await waitFor(() => expect(router.state.location.pathname).toBe("/jobs/6/timeline"));
      expect(await screen.findByRole("heading", { name: /job-six/ })).toBeInTheDocument();
      const menu = screen.getByRole("navigation", { name: "Main" });
      expect(within(menu).getByRole("link", { name: "Dashboard" })).toHaveAttribute(
        "href",
        "/jobs/6/dashboard",
      );
      expect(within(menu).getByRole("link", { name: "Profiles" })).toHaveAttribute(
        "href",
        "/profiles",
      );
    });

    it("says who deleted the job a page shows", async () => {
      backend(four).on("GET /api/jobs/6/", {
        status: 410,
        body: {
          detail: "“job-six” was deleted by bob.",
          code: "job_deleted",
          id: 6,
          name: "job-six",
          deleted_by: "bob",
          deleted_at: "2026-11-28T10:15:00Z",
        },
      });
      renderApp("/jobs/6/timeline");
      expect(
        await screen.findByRole("heading", { name: "This job was deleted" }),
      ).toBeInTheDocument();
      expect(screen.getByTestId("job-deleted")).toHaveTextContent(
        /^job-six was deleted by bob on /,
      );
      // The header goes back to the loaded job.
      expect(screen.getByTestId("topbar-profile")).toHaveTextContent("Loaded: job-four");
    });

    it("shows a job whose every part failed as Failed, with each part's reason", async () => {
      const failed = {
        ...six,
        parts_total: 2,
        parts_done: 0,
        parts_failed: 2,
        state: "failed" as const,
      };
      const part = (id: number, rank: number, error: string) => ({
        id,
        job: 6,
        node: "algo-1",
        rank,
        pid: 100 + rank,
        kind: "kineto",
        original_name: `rank-${rank}.json`,
        size_bytes: 10,
        sha256: "",
        state: "failed",
        error,
        warning: "",
        progress: 0,
        created_at: "2026-11-28T10:00:00Z",
        updated_at: "2026-11-28T10:00:00Z",
        started_at: null,
        finished_at: null,
      });
      backend(four)
        .on("GET /api/jobs/6/", { status: 200, body: failed })
        .on("GET /api/jobs/6/parts/", {
          status: 200,
          body: page([part(1, 0, "Not a trace: no traceEvents"), part(2, 1, "Truncated gzip")]),
        });
      renderApp("/jobs/6/timeline");
      const panel = await screen.findByTestId("failed-job");
      expect(within(panel).getByText("Failed")).toBeInTheDocument();
      expect(panel).toHaveTextContent("All 2 of its parts failed to process");
      expect(await within(panel).findByText(/Not a trace: no traceEvents/)).toHaveTextContent(
        "rank-0.json (algo-1 rank 0): Not a trace: no traceEvents",
      );
      expect(within(panel).getByText(/Truncated gzip/)).toBeInTheDocument();
      expect(screen.queryByText(/fills in as parts are parsed/)).not.toBeInTheDocument();
    });

    it("says nothing more when the link names the loaded job", async () => {
      backend(four);
      renderApp("/timeline?job=4");
      expect(await screen.findByRole("heading", { name: /job-four/ })).toBeInTheDocument();
      expect(screen.getByTestId("topbar-profile")).toHaveTextContent("Loaded: job-four");
      expect(screen.queryByTestId("not-loaded-notice")).not.toBeInTheDocument();
    });
  });
});
