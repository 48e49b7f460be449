import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import type { components } from "./schema";

type Schemas = components["schemas"];

export type Insights = Schemas["Insights"];
export type RuleResult = Schemas["RuleResult"];
export type RuleStatus = "issue_found" | "no_issue" | "not_evaluated";
export type RuleParameters = Schemas["RuleParameters"];
export type Parameters = Schemas["Parameters"];
export type Analyses = Schemas["Analyses"];
/** Overrides keyed `<Rule>_<parameter>`, as ProfilerReport takes them. */
export type Overrides = Record<string, string | number>;

export const insightsKey = ["insights"] as const;

const path = (jobId: number) => ({ params: { path: { job_id: jobId } } });

/** The rule results; while the server computes them the page asks again every few seconds. */
export function useInsights(jobId: number) {
  return useQuery({
    queryKey: [...insightsKey, jobId, "results"],
    queryFn: async () => unwrap(await api.GET("/api/jobs/{job_id}/insights/", path(jobId))),
    refetchInterval: (query) => (isComputing(query.state.data?.status) ? 2000 : false),
  });
}

export function isComputing(status: string | undefined): boolean {
  return status === "queued" || status === "running";
}

/** The analyses of the rules' latest run: asked once the run is known (not before, which drew the
 * tables twice), and the previous tables stay on screen while a new run's are fetched. */
export function useAnalyses(jobId: number, computedAt: string | null | undefined) {
  return useQuery({
    queryKey: [...insightsKey, jobId, "analyses", computedAt],
    queryFn: async () => unwrap(await api.GET("/api/jobs/{job_id}/analyses/", path(jobId))),
    enabled: computedAt !== undefined,
    placeholderData: keepPreviousData,
  });
}

export function useRuleParameters(jobId: number) {
  return useQuery({
    queryKey: [...insightsKey, jobId, "parameters"],
    queryFn: async () =>
      unwrap(await api.GET("/api/jobs/{job_id}/insights/parameters/", path(jobId))),
  });
}

/** Replaces the job's overrides; the server re-runs the rules, so the results are refetched. */
export function useSaveOverrides(jobId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (overrides: Overrides) =>
      unwrap(
        await api.PUT("/api/jobs/{job_id}/insights/parameters/", {
          ...path(jobId),
          body: overrides,
        }),
      ),
    onSuccess: (saved) => {
      queryClient.setQueryData([...insightsKey, jobId, "parameters"], saved);
      void queryClient.invalidateQueries({ queryKey: [...insightsKey, jobId, "results"] });
    },
  });
}

export function reportUrl(jobId: number): string {
  return `/api/jobs/${jobId}/insights/report.html`;
}
