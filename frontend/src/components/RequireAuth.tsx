import type { ReactNode } from "react";
import { Navigate, useLocation } from "react-router";
import { useMe } from "../api/auth";
import { ErrorAlert, Loading } from "./Feedback";

export function RequireAuth({ children }: { children: ReactNode }) {
  const me = useMe();
  const location = useLocation();
  if (me.isPending)
    return (
      <div className="page">
        <Loading what="your session" />
      </div>
    );
  if (me.isError)
    return (
      <div className="page">
        <ErrorAlert error={me.error} />
      </div>
    );
  if (me.data === null) {
    const next = location.pathname + location.search;
    return <Navigate to={`/login?next=${encodeURIComponent(next)}`} replace />;
  }
  return children;
}
