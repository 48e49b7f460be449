/** The pages that show one job; each has the job's own address, `/jobs/<id>/<page>`. */
export const JOB_PAGES = [
  "dashboard",
  "timeline",
  "insights",
  "cluster",
  "calltree",
  "memory",
  "sql",
  "info",
] as const;

export type JobPage = (typeof JOB_PAGES)[number];

/**
 * The address of `page` of job `jobId`: a link, a bookmark or a second tab opens that job,
 * whichever profile the viewer has loaded. `search` ("t=…&ranks=0", with or without "?") and
 * `hash` ("rule-X", with or without "#") come along.
 */
export function jobPath(jobId: number, page: JobPage, search = "", hash = ""): string {
  const query = search.replace(/^\?/, "");
  const anchor = hash.replace(/^#/, "");
  return `/jobs/${jobId}/${page}${query ? `?${query}` : ""}${anchor ? `#${anchor}` : ""}`;
}

/** The job a page's address names (`/jobs/<id>/…`'s id), or null. */
export function jobIdOf(param: string | undefined): number | null {
  return param && /^\d+$/.test(param) ? Number(param) : null;
}

/** Where an old `/<page>?job=N&…` link goes now: the job's address, other parameters kept. */
export function addressedPath(page: JobPage, search: string, hash = ""): string | null {
  const params = new URLSearchParams(search);
  const jobId = jobIdOf(params.get("job") ?? undefined);
  if (jobId === null) return null;
  params.delete("job");
  return jobPath(jobId, page, params.toString(), hash);
}
