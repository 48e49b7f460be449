import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import type { components } from "./schema";

type Schemas = components["schemas"];

/** Host threads of one part, or of one process's parts summed, as frames (parallel arrays,
 * parents first). */
export type CallTree = Schemas["CallTree"];
export type CallTreeOccurrences = Schemas["CallTreeOccurrences"];

/** One part, or (``part`` null) every part of the process ``rank`` on ``node`` (null: the
 * job's first process). */
export type CallTreeQuery = {
  part: number | null;
  rank: number | null;
  node: string | null;
  threads: number[] | null;
  inverted: boolean;
  min_ns: number;
};

function params(q: CallTreeQuery) {
  return {
    ...(q.part === null ? {} : { part: q.part }),
    ...(q.rank === null ? {} : { rank: q.rank }),
    ...(q.node === null ? {} : { node: q.node }),
    ...(q.threads === null ? {} : { threads: q.threads.join(",") }),
    inverted: q.inverted,
    min_ns: q.min_ns,
  };
}

export function useCallTree(jobId: number, query: CallTreeQuery) {
  return useQuery({
    queryKey: ["calltree", jobId, query],
    queryFn: async () =>
      unwrap(
        await api.GET("/api/jobs/{job_id}/calltree/", {
          params: { path: { job_id: jobId }, query: params(query) },
        }),
      ),
    placeholderData: (previous) => previous,
  });
}

export function useOccurrences(jobId: number, query: CallTreeQuery, path: number[] | null) {
  return useQuery({
    queryKey: ["calltree-occurrences", jobId, query, path],
    enabled: path !== null,
    queryFn: async () =>
      unwrap(
        await api.GET("/api/jobs/{job_id}/calltree/occurrences/", {
          params: {
            path: { job_id: jobId },
            query: { ...params(query), path: (path ?? []).join(","), limit: 50 },
          },
        }),
      ),
  });
}
