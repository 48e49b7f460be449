import { Navigate, type RouteObject } from "react-router";
import { preloadCharts } from "./charts/preload";
import { AppShell } from "./components/AppShell";
import { JobAddress } from "./components/JobAddress";
import { RequireAuth } from "./components/RequireAuth";
import { DashboardPage } from "./pages/dashboard/DashboardPage";
import { InfoPage } from "./pages/info/InfoPage";
import { LoginPage } from "./pages/LoginPage";
import { NotFoundPage } from "./pages/NotFoundPage";
import { ProfilesPage } from "./pages/profiles/ProfilesPage";
import { SettingsPage } from "./pages/settings/SettingsPage";
import { TokensPage } from "./pages/tokens/TokensPage";

export const routes: RouteObject[] = [
  { path: "/login", element: <LoginPage /> },
  {
    path: "/",
    element: (
      <RequireAuth>
        <AppShell />
      </RequireAuth>
    ),
    // What shows while a page's code (loaded on first use) arrives on a direct visit.
    hydrateFallbackElement: <p className="page-loading">Loading…</p>,
    children: [
      { index: true, element: <Navigate to="/profiles" replace /> },
      { path: "profiles", element: <ProfilesPage /> },
      // Without a job in the address: the loaded job's address, or how to load one.
      { element: <JobAddress />, children: jobPages() },
      {
        path: "jobs/:jobId",
        children: [{ index: true, element: <Navigate to="dashboard" replace /> }, ...jobPages()],
      },
      {
        path: "compare",
        lazy: async () => ({
          Component: (await import("./pages/compare/ComparePage")).ComparePage,
        }),
      },
      {
        path: "history",
        lazy: async () => {
          void preloadCharts(); // its charts draw as soon as its data arrives
          return { Component: (await import("./pages/history/HistoryPage")).HistoryPage };
        },
      },
      { path: "settings", element: <SettingsPage /> },
      { path: "tokens", element: <TokensPage /> },
      { path: "*", element: <NotFoundPage /> },
    ],
  },
];

/** The pages of one job: under `/jobs/:jobId/` they show that job, elsewhere the loaded one
 * (`LoadedJobGate`). A function: each place they are mounted needs route objects of its own. */
function jobPages(): RouteObject[] {
  return [
    { path: "dashboard", element: <DashboardPage /> },
    {
      path: "timeline",
      lazy: async () => ({
        Component: (await import("./pages/timeline/TimelinePage")).TimelinePage,
      }),
    },
    {
      path: "insights",
      lazy: async () => ({
        Component: (await import("./pages/insights/InsightsPage")).InsightsPage,
      }),
    },
    {
      path: "cluster",
      lazy: async () => ({
        Component: (await import("./pages/cluster/ClusterPage")).ClusterPage,
      }),
    },
    {
      path: "calltree",
      lazy: async () => ({
        Component: (await import("./pages/calltree/CallTreePage")).CallTreePage,
      }),
    },
    {
      path: "memory",
      lazy: async () => {
        void preloadCharts(); // its charts draw as soon as its data arrives
        return { Component: (await import("./pages/memory/MemoryPage")).MemoryPage };
      },
    },
    {
      path: "sql",
      lazy: async () => ({ Component: (await import("./pages/sql/SqlPage")).SqlPage }),
    },
    { path: "info", element: <InfoPage /> },
  ];
}
