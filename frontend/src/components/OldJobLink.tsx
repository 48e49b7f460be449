import { Navigate, Outlet, useLocation } from "react-router";
import { addressedPath, type JobPage } from "../lib/jobPath";

/** `/<page>?job=N&…` (links written before jobs had addresses) → `/jobs/N/<page>?…`. */
export function OldJobLink() {
  const location = useLocation();
  const page = location.pathname.split("/")[1] as JobPage;
  const moved = addressedPath(page, location.search, location.hash);
  return moved ? <Navigate to={moved} replace /> : <Outlet />;
}
