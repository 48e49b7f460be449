import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { ApiError, api, unwrap } from "./client";
import type { components } from "./schema";

type Schemas = components["schemas"];

export type TimelineTracks = Schemas["TimelineTracks"];
export type EventDetails = Schemas["EventDetails"];
export type TimelineEvent = Schemas["Event"];
export type SearchResult = Schemas["SearchResult"];

export const timelineKey = ["timeline"] as const;

/** The track tree and time span; refreshed while parts of an in-progress job arrive. */
export function useTimelineTracks(jobId: number, refetchIntervalMs: number | false) {
  return useQuery({
    queryKey: [...timelineKey, jobId, "tracks"],
    queryFn: async () =>
      unwrap(
        await api.GET("/api/jobs/{job_id}/timeline/tracks/", {
          params: { path: { job_id: jobId } },
        }),
      ),
    refetchInterval: refetchIntervalMs,
  });
}

/** A page of a collapsed group's children (``children_count`` in the tree), in tree order. */
export async function fetchTrackChildren(
  jobId: number,
  group: string,
  offset: number,
  limit: number,
): Promise<Schemas["TrackChildren"]> {
  return unwrap(
    await api.GET("/api/jobs/{job_id}/timeline/tracks/children/", {
      params: { path: { job_id: jobId }, query: { group, offset, limit } },
    }),
  );
}

export type ViewportQuery = { startNs: string; endNs: string; widthPx: number; tracks: string[] };

/** One viewport payload (binary, see profiler_app/timeline/pure/payload.py). */
export async function fetchViewport(
  jobId: number,
  query: ViewportQuery,
  signal?: AbortSignal,
): Promise<ArrayBuffer> {
  const result = await api.GET("/api/jobs/{job_id}/timeline/viewport/", {
    params: {
      path: { job_id: jobId },
      query: {
        start_ns: query.startNs,
        end_ns: query.endNs,
        width_px: query.widthPx,
        tracks: query.tracks.join(","),
      },
    },
    parseAs: "arrayBuffer",
    signal,
  });
  if (!result.response.ok) throw new ApiError(result.response.status, result.error);
  return result.data as unknown as ArrayBuffer;
}

export function useTimelineEvent(jobId: number, eventId: string | null) {
  return useQuery({
    queryKey: [...timelineKey, jobId, "event", eventId],
    queryFn: async () =>
      unwrap(
        await api.GET("/api/jobs/{job_id}/timeline/event/", {
          params: { path: { job_id: jobId }, query: { id: eventId! } },
        }),
      ),
    enabled: eventId !== null,
    staleTime: Infinity,
  });
}

export function useTimelineSearch(jobId: number, text: string) {
  return useQuery({
    queryKey: [...timelineKey, jobId, "search", text],
    queryFn: async () =>
      unwrap(
        await api.GET("/api/jobs/{job_id}/timeline/search/", {
          params: { path: { job_id: jobId }, query: { q: text, limit: 50 } },
        }),
      ),
    enabled: text.length > 0,
    placeholderData: keepPreviousData,
  });
}

/** A link that downloads the job (or a range of it) as Chrome-trace JSON. */
export function exportUrl(jobId: number, range?: { startNs: string; endNs: string }): string {
  const query = range ? `?start_ns=${range.startNs}&end_ns=${range.endNs}` : "";
  return `/api/jobs/${jobId}/timeline/export/${query}`;
}

export type RangeTotals = Schemas["RangeTotals"];
export type RangeEvents = Schemas["RangeEvents"];
export type RangeQuery = { startNs: string; endNs: string; tracks: string[] };

/** A range selection as the range endpoints read it. */
function rangeParams(range: RangeQuery) {
  return { start_ns: range.startNs, end_ns: range.endNs, tracks: range.tracks.join(",") };
}

/** Totals per track and name of a range selection, computed by the server over every event. */
export function useRangeTotals(jobId: number, range: RangeQuery | null) {
  return useQuery({
    queryKey: [...timelineKey, jobId, "range", range],
    queryFn: async () =>
      unwrap(
        await api.GET("/api/jobs/{job_id}/timeline/range/", {
          params: {
            path: { job_id: jobId },
            query: rangeParams(range!),
          },
        }),
      ),
    enabled: range !== null,
  });
}

/** The events of one name in a range selection (the earliest thousand), to outline them. */
export function useRangeEvents(jobId: number, range: RangeQuery | null, name: string | null) {
  return useQuery({
    queryKey: [...timelineKey, jobId, "range-events", range, name],
    queryFn: async () =>
      unwrap(
        await api.GET("/api/jobs/{job_id}/timeline/range/events/", {
          params: {
            path: { job_id: jobId },
            query: { ...rangeParams(range!), name: name! },
          },
        }),
      ),
    enabled: range !== null && name !== null,
  });
}
