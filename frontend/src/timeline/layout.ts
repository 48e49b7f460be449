/**
 * Layout of the track tree into rows (pure): which nodes show, in which order, how tall, and
 * what each row draws. Also the inverse: which row and which item lie under a point.
 */
import { type View, pxToTime, timeToPx } from "./coords";
import type { TrackNode, ViewportData } from "./model";

export const LANE_ROW_PX = 18;
export const COUNTER_PX = 30;
export const AGGREGATE_PX = 22;
export const HEADING_PX = 22;
export const HEADER_PX = 44; // ruler and steps band above the rows
const LANE_PAD_PX = 4;

/** What a row draws: its lane's events, a counter, the aggregate of a collapsed group, or a heading. */
export type RowKind = "events" | "counter" | "aggregate" | "heading";

export type LayoutRow = {
  node: TrackNode;
  level: number;
  kind: RowKind;
  y: number;
  height: number;
  expandable: boolean;
  expanded: boolean;
};

export type Layout = {
  rows: LayoutRow[];
  height: number;
  byId: Map<string, LayoutRow>;
  /** For every node, the nearest row that shows it (itself, or its collapsed ancestor). */
  shownAs: Map<string, LayoutRow>;
};

/** Children shown or not: a collapsed group from the server has them without sending them. */
function hasChildren(node: TrackNode): boolean {
  return (node.children?.length ?? 0) > 0 || (node.children_count ?? 0) > 0;
}

function rowKind(node: TrackNode, expanded: boolean): RowKind {
  if (node.data === "events") return "events";
  if (node.data === "counter") return "counter";
  return hasChildren(node) && !expanded ? "aggregate" : "heading";
}

function rowHeight(node: TrackNode, kind: RowKind): number {
  switch (kind) {
    case "events":
      return Math.max(node.rows ?? 1, 1) * LANE_ROW_PX + LANE_PAD_PX;
    case "counter":
      return COUNTER_PX;
    case "aggregate":
      return AGGREGATE_PX;
    default:
      return HEADING_PX;
  }
}

/**
 * Rows for the tree: children show under expanded nodes only; ``keep`` drops nodes (and what
 * is below them) from the tree, for the rank filter.
 */
export function layoutTracks(
  roots: TrackNode[],
  expanded: ReadonlySet<string>,
  keep: (node: TrackNode) => boolean = () => true,
): Layout {
  const rows: LayoutRow[] = [];
  const byId = new Map<string, LayoutRow>();
  const shownAs = new Map<string, LayoutRow>();
  let y = 0;
  const hide = (node: TrackNode, row: LayoutRow) => {
    shownAs.set(node.id, row);
    for (const child of node.children ?? []) hide(child, row);
  };
  const visit = (node: TrackNode, level: number) => {
    if (!keep(node)) return;
    const isOpen = expanded.has(node.id);
    const kind = rowKind(node, isOpen);
    const row: LayoutRow = {
      node,
      level,
      kind,
      y,
      height: rowHeight(node, kind),
      expandable: hasChildren(node),
      expanded: isOpen,
    };
    rows.push(row);
    byId.set(node.id, row);
    shownAs.set(node.id, row);
    y += row.height;
    for (const child of node.children ?? []) {
      if (isOpen) visit(child, level + 1);
      else hide(child, row);
    }
  };
  for (const root of roots) visit(root, 0);
  return { rows, height: y, byId, shownAs };
}

/** Rows overlapping [top, top + height) of the row area. */
export function visibleRows(layout: Layout, top: number, height: number): LayoutRow[] {
  return layout.rows.filter((row) => row.y + row.height > top && row.y < top + height);
}

/** The track ids a set of rows needs from the server. */
export function requestedIds(rows: LayoutRow[]): string[] {
  return rows.filter((row) => row.kind !== "heading").map((row) => row.node.id);
}

/** The vertical centre of depth ``depth`` of a lane row (in row-area coordinates). */
export function depthCentre(row: LayoutRow, depth: number): number {
  if (row.kind !== "events") return row.y + row.height / 2;
  return (
    row.y +
    LANE_PAD_PX / 2 +
    Math.min(depth, (row.node.rows ?? 1) - 1) * LANE_ROW_PX +
    LANE_ROW_PX / 2
  );
}

export function rowAt(layout: Layout, y: number): LayoutRow | null {
  let lo = 0;
  let hi = layout.rows.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const row = layout.rows[mid]!;
    if (y < row.y) hi = mid - 1;
    else if (y >= row.y + row.height) lo = mid + 1;
    else return row;
  }
  return null;
}

export type Hit =
  | {
      type: "event";
      row: LayoutRow;
      part: number;
      idx: number;
      startNs: number;
      durNs: number;
      name: string;
      kind: number;
      depth: number;
    }
  | {
      type: "block";
      row: LayoutRow;
      startNs: number;
      endNs: number;
      count: number;
      busyNs: number;
      name: string;
      depth: number;
    }
  | { type: "counter"; row: LayoutRow; timeNs: number; mean: number; low: number; high: number }
  | { type: "aggregate"; row: LayoutRow; timeNs: number; count: number; occupancy: number };

/** The last index in [lo, hi) of a sorted array whose value is <= ``value`` (lo - 1 if none). */
function lastAtOrBefore(values: Float64Array, lo: number, hi: number, value: number): number {
  let a = lo;
  let b = hi;
  while (a < b) {
    const mid = (a + b) >> 1;
    if (values[mid]! <= value) a = mid + 1;
    else b = mid;
  }
  return a - 1;
}

/**
 * What lies under (x, y): an event (within ``slopPx`` of it), a merged block, or a counter or
 * aggregate bucket. ``y`` is in row-area coordinates.
 */
export function hitTest(
  layout: Layout,
  data: ViewportData | null,
  view: View,
  widthPx: number,
  x: number,
  y: number,
  slopPx = 2,
): Hit | null {
  const row = rowAt(layout, y);
  if (!row || !data) return null;
  const track = data.tracks.get(row.node.id);
  if (!track) return null;
  const timeNs = pxToTime(view, widthPx, x);
  if (track.type === "events") {
    const depth = Math.floor((y - row.y - LANE_PAD_PX / 2) / LANE_ROW_PX);
    const slopNs = (slopPx / widthPx) * (view.endNs - view.startNs);
    for (const slice of track.rows) {
      if (slice.depth !== depth) continue;
      const [eo, en] = slice.events;
      const ev = data.events;
      // Events of a row do not overlap: the candidate is the last one starting before the point.
      const i = lastAtOrBefore(ev.start, eo, eo + en, timeNs + slopNs);
      if (i >= eo && ev.start[i]! + ev.dur[i]! + slopNs >= timeNs) {
        return {
          type: "event",
          row,
          part: slice.part,
          idx: ev.idx[i]!,
          startNs: ev.start[i]!,
          durNs: ev.dur[i]!,
          name: data.names[ev.name[i]!] ?? "",
          kind: ev.kind[i]!,
          depth,
        };
      }
      const [bo, bn] = slice.blocks;
      const bl = data.blocks;
      const j = lastAtOrBefore(bl.start, bo, bo + bn, timeNs);
      if (j >= bo && bl.end[j]! >= timeNs) {
        return {
          type: "block",
          row,
          startNs: bl.start[j]!,
          endNs: bl.end[j]!,
          count: bl.count[j]!,
          busyNs: bl.busy[j]!,
          name: data.names[bl.name[j]!] ?? "",
          depth,
        };
      }
    }
    return null;
  }
  const grid = data.strip;
  const bucket = Math.floor((timeNs - grid.startNs) / 2 ** grid.k);
  if (bucket < 0 || bucket >= grid.count) return null;
  const at = track.offset + bucket;
  if (track.type === "counter") {
    const mean = data.counters.mean[at]!;
    if (Number.isNaN(mean)) return null;
    return {
      type: "counter",
      row,
      timeNs,
      mean,
      low: data.counters.low[at]!,
      high: data.counters.high[at]!,
    };
  }
  const busy = data.aggregates.busy[at]!;
  return {
    type: "aggregate",
    row,
    timeNs,
    count: data.aggregates.count[at]!,
    occupancy: Math.min(busy / (2 ** grid.k * Math.max(track.lanes, 1)), 1),
  };
}

/** Screen x of an event's start and end, clipped to the plot (for drawing arrows). */
export function eventSpanPx(
  view: View,
  widthPx: number,
  startNs: number,
  durNs: number,
): [number, number] {
  return [timeToPx(view, widthPx, startNs), timeToPx(view, widthPx, startNs + durNs)];
}

/** Ids of the rows between two heights that hold events (a lane, or a collapsed group standing
 * for the lanes below it): the tracks a range selection's vertical extent covers. */
export function rowsBetween(layout: Layout, y0: number, y1: number): string[] {
  const top = Math.min(y0, y1);
  const bottom = Math.max(y0, y1);
  return layout.rows
    .filter(
      (row) =>
        row.y < bottom &&
        row.y + row.height > top &&
        (row.kind === "events" || row.kind === "aggregate"),
    )
    .map((row) => row.node.id);
}
