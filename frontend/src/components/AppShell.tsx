import { NavLink, Outlet, useMatch } from "react-router";
import { useLogout, useMe } from "../api/auth";
import { useLoadedProfile } from "../api/loadedProfile";
import { type JobPage, jobIdOf, jobPath } from "../lib/jobPath";
import { NotLoadedNotice, ShownJobProvider } from "./NotLoadedNotice";
import { jobLabel, type ShownJob } from "./shownJobContext";

const SECTIONS: { to: string; label: string; page?: JobPage }[] = [
  { to: "/profiles", label: "Profiles" },
  { to: "/dashboard", label: "Dashboard", page: "dashboard" },
  { to: "/timeline", label: "Timeline", page: "timeline" },
  { to: "/insights", label: "Insights", page: "insights" },
  { to: "/cluster", label: "Cluster", page: "cluster" },
  { to: "/calltree", label: "Call tree", page: "calltree" },
  { to: "/memory", label: "Memory", page: "memory" },
  { to: "/compare", label: "Compare" },
  { to: "/history", label: "History" },
  { to: "/sql", label: "SQL", page: "sql" },
  { to: "/info", label: "Info", page: "info" },
  { to: "/settings", label: "Settings" },
];

export function AppShell() {
  return <ShownJobProvider>{(shown) => <Shell shown={shown} />}</ShownJobProvider>;
}

function Shell({ shown }: { shown: ShownJob | null }) {
  const me = useMe();
  const loaded = useLoadedProfile();
  const logout = useLogout();
  const loadedName = loaded.data?.job_detail.name;
  // While the address names a job, the job pages' links stay on it; elsewhere they name the
  // loaded job, so every job page's address is a link to what it shows.
  const addressed = jobIdOf(useMatch("/jobs/:jobId/*")?.params.jobId);
  const linkedJob = addressed ?? loaded.data?.job ?? null;
  // A page opened by a link to another job: the header names that job, never the loaded one.
  const other = shown !== null && !loaded.isPending && shown.id !== loaded.data?.job ? shown : null;

  return (
    <div className="app">
      <header className="topbar">
        <span className="brand">Profiler</span>
        <nav className="topnav" aria-label="Main">
          {SECTIONS.map((section) => (
            <NavLink
              key={section.to}
              to={
                section.page && linkedJob !== null ? jobPath(linkedJob, section.page) : section.to
              }
            >
              {section.label}
            </NavLink>
          ))}
        </nav>
        <span
          className="topbar-loaded"
          data-testid="topbar-profile"
          // The whole name, where a narrow screen cuts it short.
          title={
            other
              ? `Viewing ${jobLabel(other)}, a job that is not your loaded profile`
              : loadedName
                ? `Loaded: ${loadedName}, the profile the data views show`
                : "No profile loaded"
          }
        >
          {other ? (
            <>
              Viewing: <strong>{jobLabel(other)}</strong>{" "}
              <span className="badge badge-partial">not loaded</span>
            </>
          ) : loadedName ? (
            <>
              Loaded: <strong>{loadedName}</strong>
            </>
          ) : (
            <span className="muted-inverse">No profile loaded</span>
          )}
        </span>
        <span className="topbar-user">
          <span data-testid="current-user">{me.data?.username}</span>
          {me.data?.is_staff && <span className="badge badge-admin">admin</span>}
          <NavLink to="/tokens" className="topbar-link">
            API tokens
          </NavLink>
          <button
            type="button"
            className="btn btn-small btn-inverse"
            disabled={logout.isPending}
            // Signed out, the page sends its reader to sign in and come back to it (RequireAuth):
            // the one navigation, where a second one here raced it.
            onClick={() => logout.mutate()}
          >
            Log out
          </button>
        </span>
      </header>
      <main className="page">
        {other && <NotLoadedNotice shown={other} />}
        <Outlet />
      </main>
    </div>
  );
}
