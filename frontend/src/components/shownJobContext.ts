import { createContext, useContext, useEffect } from "react";

/** A job a page shows by its id (a shared link), which need not be the loaded profile. */
export type ShownJob = { id: number; name: string | null };

export const ShownJobContext = createContext<(job: ShownJob | null) => void>(() => undefined);

/** Tells the shell which job this page shows (null: none, or not known to exist). */
export function useShowJob(job: ShownJob | null) {
  const setShown = useContext(ShownJobContext);
  const id = job?.id ?? null;
  const name = job?.name ?? null;
  useEffect(() => {
    setShown(id === null ? null : { id, name });
    return () => setShown(null);
  }, [id, name, setShown]);
}

export function jobLabel(job: ShownJob): string {
  return job.name ?? `job ${job.id}`;
}
