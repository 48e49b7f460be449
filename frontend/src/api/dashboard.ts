import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { ApiError, api, unwrap } from "./client";
import type { components } from "./schema";

type Schemas = components["schemas"];

/** Every panel's data in one document; times are integer nanoseconds. */
export type Dashboard = Schemas["Dashboard"];
export type ActiveShare = Schemas["ActivePoints"];
export type Utilization = Schemas["Utilization"];
export type KernelTop = Schemas["KernelTop"];
/** What the Dashboard's shares of time are shares of (captured steps or the profile's span). */
export type TakenOver = Schemas["TakenOver"];
export type StepTime = Schemas["StepTime"];
/** The Dashboard's headline: where a step's time goes, the two utilisations, the step time. */
export type Headline = Schemas["Headline"];
export type PrecisionRow = Schemas["PrecisionRow"];
/** A row of the GPU activity or memory operations panel (only the latter carries bytes). */
export type KindRow = Schemas["KindRow"];
export type CustomHistogram = Schemas["CustomHistogram"];

export const dashboardKey = ["dashboard"] as const;

export function useDashboard(jobId: number) {
  return useQuery({
    queryKey: [...dashboardKey, jobId],
    queryFn: async () =>
      unwrap(
        await api.GET("/api/jobs/{job_id}/dashboard/", { params: { path: { job_id: jobId } } }),
      ),
  });
}

/** Its own answer: the breakdown reads the window's events, the dashboard's panels do not. */
export function useHeadline(jobId: number) {
  return useQuery({
    queryKey: [...dashboardKey, jobId, "headline"],
    queryFn: async () =>
      unwrap(
        await api.GET("/api/jobs/{job_id}/headline/", { params: { path: { job_id: jobId } } }),
      ),
  });
}

export function useAnnotationDurations(jobId: number, name: string) {
  return useQuery({
    queryKey: [...dashboardKey, jobId, "annotation", name],
    queryFn: async () =>
      unwrap(
        await api.GET("/api/jobs/{job_id}/annotations/durations/", {
          params: { path: { job_id: jobId }, query: { name } },
        }),
      ),
  });
}

const histogramsKey = (jobId: number) => ["histograms", jobId] as const;

/** The custom histograms this user added to this job's dashboard. */
export function useCustomHistograms(jobId: number) {
  return useQuery({
    queryKey: histogramsKey(jobId),
    queryFn: async () =>
      unwrap(await api.GET("/api/histograms/", { params: { query: { job: jobId } } })),
  });
}

export function useCreateHistogram(jobId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (annotationName: string) =>
      unwrap(
        await api.POST("/api/histograms/", {
          body: { job: jobId, annotation_name: annotationName },
        }),
      ),
    onSuccess: (created) =>
      queryClient.setQueryData<CustomHistogram[]>(histogramsKey(jobId), (list = []) => [
        ...list,
        created,
      ]),
  });
}

export function useDeleteHistogram(jobId: number) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (id: number) => {
      const result = await api.DELETE("/api/histograms/{id}/", { params: { path: { id } } });
      if (!result.response.ok) throw new ApiError(result.response.status, result.error);
    },
    onSuccess: (_, id) =>
      queryClient.setQueryData<CustomHistogram[]>(histogramsKey(jobId), (list = []) =>
        list.filter((histogram) => histogram.id !== id),
      ),
  });
}
