import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import type { components } from "./schema";

type Schemas = components["schemas"];

/** One part's host threads as frames (parallel arrays, parents first). */
export type CallTree = Schemas["CallTree"];
export type CallTreeOccurrences = Schemas["CallTreeOccurrences"];

export type CallTreeQuery = {
  part: number | null;
  threads: number[] | null;
  inverted: boolean;
  min_ns: number;
};

function params(q: CallTreeQuery) {
  return {
    ...(q.part === null ? {} : { part: q.part }),
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
