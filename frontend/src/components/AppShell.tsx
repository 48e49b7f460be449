import { NavLink, Outlet, useNavigate } from "react-router";
import { useLogout, useMe } from "../api/auth";
import { useLoadedProfile } from "../api/loadedProfile";

const SECTIONS = [
  { to: "/profiles", label: "Profiles" },
  { to: "/dashboard", label: "Dashboard" },
  { to: "/timeline", label: "Timeline" },
  { to: "/insights", label: "Insights" },
  { to: "/cluster", label: "Cluster" },
  { to: "/calltree", label: "Call tree" },
  { to: "/memory", label: "Memory" },
  { to: "/compare", label: "Compare" },
  { to: "/sql", label: "SQL" },
  { to: "/info", label: "Info" },
  { to: "/settings", label: "Settings" },
];

export function AppShell() {
  const me = useMe();
  const loaded = useLoadedProfile();
  const logout = useLogout();
  const navigate = useNavigate();
  const loadedName = loaded.data?.job_detail.name;

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
        <span className="topbar-loaded" title="The profile the data views show">
          {loadedName ? (
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
          <button type="button" className="btn btn-small btn-inverse" disabled={logout.isPending}
            onClick={() => logout.mutate(undefined, { onSuccess: () => navigate("/login") })}>
            Log out
          </button>
        </span>
      </header>
      <main className="page">
        <Outlet />
      </main>
    </div>
  );
}
