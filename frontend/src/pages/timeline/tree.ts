/** Choices about the track tree that the page makes: default expansion and the rank filter. */
import type { Layout } from "../../timeline/layout";
import type { TrackNode } from "../../timeline/model";

const ALWAYS_OPEN = new Set(["node", "gpus"]);
const OPEN_IN_FIRST_PROCESS = new Set(["process", "device", "hosts"]);

/** A node's CPU heading holds its counters and the processes that ran no GPU work (all of a
 * CPU-only job's). Holding counters alone it starts closed: its row draws the CPU utilisation,
 * and its other counters (I/O wait, memory, faults…) opened put a collector job's first GPU
 * stream below the fold of a laptop's screen. */
function holdsProcesses(cpu: TrackNode): boolean {
  return (cpu.children_count ?? 0) > 0 || !!cpu.children?.some((c) => c.kind !== "counter");
}

/**
 * Nodes, their GPUs heading, a CPU heading that holds processes, and the first process down to
 * its streams and host threads are open; every other process starts collapsed, drawn as one
 * aggregate row, and so does a CPU heading of counters alone.
 */
export function defaultExpanded(roots: TrackNode[]): Set<string> {
  const open = new Set<string>();
  let firstProcess: TrackNode | null = null;
  const visit = (node: TrackNode) => {
    if (ALWAYS_OPEN.has(node.kind) || (node.kind === "cpu" && holdsProcesses(node)))
      open.add(node.id);
    if (node.kind === "process" && firstProcess === null) firstProcess = node;
    node.children?.forEach(visit);
  };
  roots.forEach(visit);
  const openInside = (node: TrackNode) => {
    if (OPEN_IN_FIRST_PROCESS.has(node.kind)) open.add(node.id);
    node.children?.forEach(openInside);
  };
  if (firstProcess) openInside(firstProcess);
  return open;
}

/** The ranks that processes of the tree ran. */
export function ranksOf(roots: TrackNode[]): number[] {
  const ranks = new Set<number>();
  const visit = (node: TrackNode) => {
    if (node.kind === "process")
      for (const rank of (node.info?.ranks as number[] | undefined) ?? []) ranks.add(rank);
    node.children?.forEach(visit);
  };
  roots.forEach(visit);
  return [...ranks].sort((a, b) => a - b);
}

/** Keeps processes that ran one of ``ranks`` (all when null), and everything else. */
export function rankFilter(ranks: number[] | null): (node: TrackNode) => boolean {
  if (!ranks) return () => true;
  const wanted = new Set(ranks);
  return (node) =>
    node.kind !== "process" ||
    ((node.info?.ranks as number[] | undefined) ?? []).some((r) => wanted.has(r));
}

/** The rank filter after a rank's box is clicked: null (all shown) when all or none would be. */
export function toggleRank(ranks: number[] | null, all: number[], rank: number): number[] | null {
  const current = new Set(ranks ?? all);
  if (!current.delete(rank)) current.add(rank);
  if (current.size === 0 || current.size === all.length) return null;
  return [...current].sort((a, b) => a - b);
}

/** Ids of the nodes above ``id``, outermost first (empty when ``id`` is not in the tree). */
export function ancestorsOf(roots: TrackNode[], id: string): string[] {
  const path: string[] = [];
  const find = (node: TrackNode): boolean => {
    if (node.id === id) return true;
    path.push(node.id);
    if (node.children?.some(find)) return true;
    path.pop();
    return false;
  };
  return roots.some(find) ? path : [];
}

const PATH_SEPARATOR = " › ";

/** "algo-1 › HOST-0 PID-1102 › GPU-0 device › stream 7": where a track sits in the tree. */
export function trackPath(layout: Layout, roots: TrackNode[], id: string): string {
  const labels: string[] = [];
  const find = (node: TrackNode): boolean => {
    labels.push(node.label);
    if (node.id === id || node.children?.some(find)) return true;
    labels.pop();
    return false;
  };
  roots.some(find);
  return labels.length ? labels.join(PATH_SEPARATOR) : (layout.byId.get(id)?.node.label ?? id);
}

/** Track paths without the leading steps every one of them shares: the range table's rows of
 * one rank read "GPU-0 host › thread 1262", of several ranks keep what tells them apart. */
export function withoutSharedPrefix(paths: string[]): string[] {
  const split = paths.map((path) => path.split(PATH_SEPARATOR));
  if (!split.length) return [];
  let shared = split.reduce((least, steps) => Math.min(least, steps.length - 1), Infinity);
  for (let i = 0; i < shared; i++) {
    if (split.some((steps) => steps[i] !== split[0]![i])) shared = i;
  }
  return split.map((steps) => steps.slice(shared).join(PATH_SEPARATOR));
}
