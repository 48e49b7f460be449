import { type ReactNode, useState } from "react";
import { useLoadedProfile, useReplaceProfile } from "../api/loadedProfile";
import { ErrorAlert } from "./Feedback";
import { jobLabel, type ShownJob, ShownJobContext } from "./shownJobContext";

/** Holds the job the current page shows by id, for the header and the not-loaded notice. */
export function ShownJobProvider({
  children,
}: {
  children: (shown: ShownJob | null) => ReactNode;
}) {
  const [shown, setShown] = useState<ShownJob | null>(null);
  return <ShownJobContext.Provider value={setShown}>{children(shown)}</ShownJobContext.Provider>;
}

/** Says that the page shows a job other than the loaded one, and offers to load it. */
export function NotLoadedNotice({ shown }: { shown: ShownJob }) {
  const loaded = useLoadedProfile();
  const { load, unload, replace } = useReplaceProfile();
  const current = loaded.data ?? null;
  const busy = load.isPending || unload.isPending;
  // One profile is loaded at a time: the button says it unloads the current one first.
  const swap = () => replace(shown.id, current !== null);
  return (
    <div className="alert alert-warning not-loaded" role="status" data-testid="not-loaded-notice">
      <span>
        You are viewing <strong>{jobLabel(shown)}</strong>, which is not the loaded profile
        {current ? (
          <>
            {" "}
            (<strong>{current.job_detail.name}</strong> is loaded)
          </>
        ) : (
          " (no profile is loaded)"
        )}
        .
      </span>
      <button
        type="button"
        className="btn btn-small"
        disabled={busy || loaded.isPending}
        onClick={() => void swap().catch(() => undefined)}
      >
        {busy
          ? "Loading…"
          : current
            ? `Unload ${current.job_detail.name} and load ${jobLabel(shown)}`
            : `Load ${jobLabel(shown)}`}
      </button>
      {(load.error || unload.error) && <ErrorAlert error={load.error ?? unload.error} />}
    </div>
  );
}
