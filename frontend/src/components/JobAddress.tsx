import { Navigate, Outlet, useLocation } from "react-router";
import { useLoadedProfile } from "../api/loadedProfile";
import { addressedPath, type JobPage, jobPath } from "../lib/jobPath";

/**
 * A job page reached without a job in its address moves to the address of the job it shows,
 * so the address bar is always a link to what is on screen: `/<page>?job=N&…` (links written
 * before jobs had addresses) to job N's, `/<page>` to the loaded job's. With nothing loaded,
 * the page says how to load a profile.
 */
export function JobAddress() {
  const location = useLocation();
  const loaded = useLoadedProfile();
  const page = location.pathname.split("/")[1] as JobPage;
  const moved = addressedPath(page, location.search, location.hash);
  if (moved) return <Navigate to={moved} replace />;
  if (loaded.data) {
    return <Navigate to={jobPath(loaded.data.job, page, location.search, location.hash)} replace />;
  }
  // Asked as the app starts (prefetchSession): a moment at most.
  if (loaded.isPending) return null;
  return <Outlet />;
}
