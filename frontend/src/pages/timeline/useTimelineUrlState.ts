import { useCallback, useEffect, useRef, useState } from "react";
import { useSearchParams } from "react-router";
import type { TrackNode } from "../../timeline/model";
import { defaultExpanded } from "./tree";
import { parseTimelineUrl, writeTimelineUrl } from "./urlState";

/** How long the shown state must settle before the address follows it: panning does not
 * write a history entry's worth of URLs per second. */
const URL_WRITE_MS = 400;

/**
 * What a link to the timeline holds (the shown range, rank filter, selection, range selection
 * and expanded tracks) as the page's state. It opens from the address the page was opened
 * with, read once: from then on the page owns it, and the address follows it a moment after it
 * settles, so the address bar is always a link to what is shown.
 */
export function useTimelineUrlState(treeRoots: TrackNode[]) {
  const [params, setParams] = useSearchParams();
  const [initial] = useState(() => parseTimelineUrl(params));
  const [range, setRange] = useState(initial.range);
  const [ranks, setRanks] = useState(initial.ranks);
  const [selection, setSelection] = useState(initial.selection);
  const [area, setArea] = useState(initial.area);
  const [open, setOpen] = useState<ReadonlySet<string>>(() =>
    initial.open ? new Set(initial.open) : defaultExpanded(treeRoots),
  );

  const next = writeTimelineUrl({
    job: null, // the path names the job (/jobs/<id>/timeline), or it is the loaded one
    ranks,
    range,
    selection,
    open: [...open],
    area,
  }).toString();
  const latest = useRef({ params, setParams });
  useEffect(() => {
    latest.current = { params, setParams };
  });
  useEffect(() => {
    const timer = window.setTimeout(() => {
      const { params: current, setParams: write } = latest.current;
      if (next !== current.toString()) write(new URLSearchParams(next), { replace: true });
    }, URL_WRITE_MS);
    return () => window.clearTimeout(timer);
  }, [next]);

  const toggleOpen = useCallback(
    (id: string) =>
      setOpen((shown) => {
        const toggled = new Set(shown);
        if (!toggled.delete(id)) toggled.add(id);
        return toggled;
      }),
    [],
  );
  // The same set when nothing new opens: the tree's layout is not rebuilt for nothing.
  const openAll = useCallback(
    (ids: string[]) =>
      setOpen((shown) => (ids.every((id) => shown.has(id)) ? shown : new Set([...shown, ...ids]))),
    [],
  );

  return {
    /** The range the link opened on (absolute ns), or null: the whole job. */
    initialRange: initial.range,
    range,
    setRange,
    ranks,
    setRanks,
    selection,
    setSelection,
    area,
    setArea,
    open,
    toggleOpen,
    openAll,
  };
}
