/**
 * Groups of the track tree too large to send whole (a process of 200,000 threads): the server
 * answers them collapsed, with ``children_count`` and no children, and their children a page
 * at a time. Pure: how the pages read so far join the tree.
 */
import type { TrackNode } from "../../timeline/model";

/** Children asked for at a time. */
export const GROUP_PAGE = 500;
/** The kind of the row after a group's pages while some of its children are left to read. */
export const MORE_KIND = "more";

/** Children read so far, by group id, in tree order. */
export type GroupPages = ReadonlyMap<string, TrackNode[]>;

/** The row that reads a group's next page: ``info`` holds the group, and how many of its
 * children are shown. */
export function moreNode(group: TrackNode, shown: number): TrackNode {
  return {
    id: `${group.id}#more`,
    label: "Show more",
    kind: MORE_KIND,
    data: null,
    info: { group: group.id, shown, count: group.children_count },
  };
}

/** The tree with each collapsed group's pages as its children, followed by a "more" row
 * while some are left; nodes without pages below them stay the same objects. */
export function withPages(roots: TrackNode[], pages: GroupPages): TrackNode[] {
  if (pages.size === 0) return roots;
  const visit = (node: TrackNode): TrackNode => {
    const read = node.children_count !== undefined ? pages.get(node.id) : undefined;
    const children = read ?? node.children;
    if (!children) return node;
    const next = children.map(visit);
    if (read) {
      if (read.length < node.children_count!) next.push(moreNode(node, read.length));
      return { ...node, children: next };
    }
    return next.every((child, i) => child === children[i]) ? node : { ...node, children: next };
  };
  return roots.map(visit);
}

/** Open collapsed groups, shown in the tree, whose first page has not been read. */
export function unreadOpenGroups(roots: TrackNode[], expanded: ReadonlySet<string>): string[] {
  const found: string[] = [];
  const visit = (node: TrackNode) => {
    if (!expanded.has(node.id)) return;
    if (node.children_count !== undefined && node.children === undefined) found.push(node.id);
    node.children?.forEach(visit);
  };
  roots.forEach(visit);
  return found;
}
