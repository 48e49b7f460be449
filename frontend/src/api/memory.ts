import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import type { components } from "./schema";

type Schemas = components["schemas"];

/** A job's memory view: every part's peaks, one part's curves and top allocators. */
export type Memory = Schemas["Memory"];
export type MemoryDevice = Schemas["MemoryDevice"];
export type MemoryPeak = Schemas["MemoryPeak"];
export type NvmlSeries = Schemas["NvmlSeries"];
export type MemoryEvents = Schemas["MemoryEvents"];

/** `part` null: the part with the highest peak. */
export function useMemory(jobId: number, part: number | null) {
  return useQuery({
    queryKey: ["memory", jobId, part],
    queryFn: async () =>
      unwrap(
        await api.GET("/api/jobs/{job_id}/memory/", {
          params: { path: { job_id: jobId }, query: part === null ? {} : { part } },
        }),
      ),
    placeholderData: (previous) => previous,
  });
}

export type EventQuery = {
  part: number;
  device: string;
  min_bytes?: number;
  start_ns?: number;
  end_ns?: number;
  offset: number;
  limit: number;
};

export function useMemoryEvents(jobId: number, query: EventQuery) {
  return useQuery({
    queryKey: ["memory-events", jobId, query],
    queryFn: async () =>
      unwrap(
        await api.GET("/api/jobs/{job_id}/memory/events/", {
          params: { path: { job_id: jobId }, query },
        }),
      ),
    placeholderData: (previous) => previous,
  });
}
