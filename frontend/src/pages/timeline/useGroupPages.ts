import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { fetchTrackChildren } from "../../api/timeline";
import type { TrackNode } from "../../timeline/model";
import { GROUP_PAGE, withPages, unreadOpenGroups } from "./groupPages";

/**
 * The track tree with the pages of its collapsed groups read so far: an open group's first
 * page is read when it opens (or opens from a link), the next on ``showMore(group)``.
 */
export function useGroupPages(jobId: number, roots: TrackNode[], expanded: ReadonlySet<string>) {
  const [pages, setPages] = useState<ReadonlyMap<string, TrackNode[]>>(() => new Map());
  const [error, setError] = useState<unknown>(null);
  const reading = useRef(new Set<string>());
  const tree = useMemo(() => withPages(roots, pages), [roots, pages]);

  const read = useCallback(
    async (group: string, offset: number) => {
      if (reading.current.has(group)) return;
      reading.current.add(group);
      try {
        const page = await fetchTrackChildren(jobId, group, offset, GROUP_PAGE);
        setPages((before) => {
          const next = new Map(before);
          const kept = (before.get(group) ?? []).slice(0, offset);
          next.set(group, [...kept, ...(page.children as TrackNode[])]);
          return next;
        });
        setError(null);
      } catch (failed) {
        setError(failed);
      } finally {
        reading.current.delete(group);
      }
    },
    [jobId],
  );

  useEffect(() => {
    // A fetch, its answer set once it arrives (the rule sees only the setState inside read).
    // eslint-disable-next-line react-hooks/set-state-in-effect
    for (const group of unreadOpenGroups(tree, expanded)) void read(group, 0);
  }, [tree, expanded, read]);

  const showMore = useCallback(
    (group: string) => void read(group, pages.get(group)?.length ?? 0),
    [read, pages],
  );
  return { roots: tree, showMore, error };
}
