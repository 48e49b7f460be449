import { NavLink, Outlet, useNavigate } from "react-router";
import { useLogout, useMe } from "../api/auth";
import { useLoadedProfile } from "../api/loadedProfile";
import { NotLoadedNotice, ShownJobProvider } from "./NotLoadedNotice";
import { jobLabel, type ShownJob } from "./shownJobContext";

const SECTIONS = [
  { to: "/profiles", label: "Profiles" },
  { to: "/dashboard", label: "Dashboard" },
  { to: "/timeline", label: "Timeline" },
  { to: "/insights", label: "Insights" },
  { to: "/cluster", label: "Cluster" },
  { to: "/calltree", label: "Call tree" },
  { to: "/memory", label: "Memory" },
  { to: "/compare", label: "Compare" },
  { to: "/history", label: "History" },
  { to: "/sql", label: "SQL" },
  { to: "/info", label: "Info" },
  { to: "/settings", label: "Settings" },
];

export function AppShell() {
  return <ShownJobProvider>{(shown) => <Shell shown={shown} />}</ShownJobProvider>;
}

function Shell({ shown }: { shown: ShownJob | null }) {
  const me = useMe();
  const loaded = useLoadedProfile();
  const logout = useLogout();
  const navigate = useNavigate();
  const loadedName = loaded.data?.job_detail.name;
  // A page opened by a link to another job: the header names that job, never the loaded one.
  const other = shown !== null && !loaded.isPending && shown.id !== loaded.data?.job ? shown : null;

  return (
    <div className="app">
      <header className="topbar">
        <span className="brand">Profiler</span>
        <nav className="topnav" aria-label="Main">
          {SECTIONS.map((section) => (
            <NavLink key={section.to} to={section.to}>
              {section.label}
            </NavLink>
          ))}
        </nav>
        <span
          className="topbar-loaded"
          data-testid="topbar-profile"
          title={
            other
              ? "This page shows a job that is not your loaded profile"
              : "The profile the data views show"
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
            onClick={() => logout.mutate(undefined, { onSuccess: () => navigate("/login") })}
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
