import type { JobListQuery } from "../../api/jobs";
import type { JobState } from "../../api/types";
import { endOfLocalDayIso, startOfLocalDayIso } from "../../lib/format";
import { JOB_STATES, TAG_PATTERN } from "../../lib/jobs";

/** What the Profiles page keeps in its URL, so a reload or a shared link shows the same list. */
export type ListState = {
  search: string;
  statuses: JobState[];
  fromDay: string;
  toDay: string;
  /** Only the jobs the signed-in user owns. */
  mine: boolean;
  /** Only the jobs that have every one of these tags. */
  tags: string[];
  ordering: string;
  page: number;
};

export const DEFAULT_ORDERING = "-created_at";
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const KNOWN_STATUSES = new Set<string>(JOB_STATES.map((s) => s.value));

export function readListState(params: URLSearchParams): ListState {
  const page = Number(params.get("page"));
  const day = (key: string) => {
    const value = params.get(key) ?? "";
    return DAY.test(value) ? value : "";
  };
  return {
    search: params.get("q") ?? "",
    statuses: params.getAll("status").filter((s): s is JobState => KNOWN_STATUSES.has(s)),
    fromDay: day("from"),
    toDay: day("to"),
    mine: params.get("mine") === "1",
    tags: [...new Set(params.getAll("tag").filter((tag) => TAG_PATTERN.test(tag)))],
    ordering: params.get("sort") || DEFAULT_ORDERING,
    page: Number.isInteger(page) && page > 0 ? page : 1,
  };
}

export function writeListState(state: ListState): URLSearchParams {
  const params = new URLSearchParams();
  if (state.search) params.set("q", state.search);
  for (const status of state.statuses) params.append("status", status);
  if (state.fromDay) params.set("from", state.fromDay);
  if (state.toDay) params.set("to", state.toDay);
  if (state.mine) params.set("mine", "1");
  for (const tag of state.tags) params.append("tag", tag);
  if (state.ordering !== DEFAULT_ORDERING) params.set("sort", state.ordering);
  if (state.page > 1) params.set("page", String(state.page));
  return params;
}

export function toJobListQuery(state: ListState): JobListQuery {
  const query: JobListQuery = { ordering: state.ordering, page: state.page };
  if (state.search.trim()) query.search = state.search.trim();
  if (state.statuses.length) query.status = state.statuses;
  if (state.fromDay) query.created_after = startOfLocalDayIso(state.fromDay);
  if (state.toDay) query.created_before = endOfLocalDayIso(state.toDay);
  if (state.mine) query.mine = true;
  if (state.tags.length) query.tag = state.tags;
  return query;
}

export function hasFilters(state: ListState): boolean {
  return Boolean(
    state.search.trim() ||
    state.statuses.length ||
    state.fromDay ||
    state.toDay ||
    state.mine ||
    state.tags.length,
  );
}

/** Clicking a sorted column flips it; a new column starts in the order people expect of it. */
export function nextOrdering(current: string, field: string): string {
  if (current === field) return `-${field}`;
  if (current === `-${field}`) return field;
  return field === "name" || field === "status" ? field : `-${field}`;
}
