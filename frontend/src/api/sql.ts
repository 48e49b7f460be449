import { useMutation, useQuery } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import type { components } from "./schema";

type Schemas = components["schemas"];

/** A query's answer: integers beyond 2**53 (epoch nanoseconds) come as text. */
export type SqlResult = Schemas["SqlResult"];
export type SqlSchema = Schemas["SqlSchema"];

/** The views a query can read, their columns and the example queries. */
export function useSqlSchema() {
  return useQuery({
    queryKey: ["sql-schema"],
    queryFn: async () => unwrap(await api.GET("/api/sql/schema/")),
    staleTime: Infinity,
  });
}

export function useSqlQuery(jobId: number) {
  return useMutation({
    mutationFn: async (query: string) =>
      unwrap(
        await api.POST("/api/jobs/{job_id}/sql/", {
          params: { path: { job_id: jobId } },
          body: { query },
        }),
      ),
  });
}
