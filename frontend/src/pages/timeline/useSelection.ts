import { useCallback, useEffect } from "react";
import { useTimelineEvent } from "../../api/timeline";
import { type Bounds, type View, centreOn, focusOn } from "../../timeline/coords";
import type { Hit } from "../../timeline/layout";
import { type TrackNode, eventId, nsBetween } from "../../timeline/model";
import type { SearchPick } from "./SearchBox";
import type { Connection } from "./SelectionPane";
import { ancestorsOf } from "./tree";

type Props = {
  jobId: number;
  originNs: string;
  bounds: Bounds;
  /** The track tree as drawn, to open the tracks down to a selected event. */
  roots: TrackNode[];
  /** The selected event's id, kept in the link. */
  selection: string | null;
  setSelection: (id: string | null) => void;
  openAll: (ids: string[]) => void;
  /** What the canvas shows now, and how to send it elsewhere. */
  liveView: View | undefined;
  jumpTo: (view: View) => void;
};

/**
 * The selected event: its fields from the server, and every way to select one (a click, a
 * search result, the other end of a launch, a finding's link), each opening the tracks down
 * to it and, where the user asked for it, bringing it into view.
 */
export function useSelection({
  jobId,
  originNs,
  bounds,
  roots,
  selection,
  setSelection,
  openAll,
  liveView,
  jumpTo,
}: Props) {
  const query = useTimelineEvent(jobId, selection);
  const details = selection ? query.data : undefined;
  const reveal = useCallback(
    (track: string) => openAll(ancestorsOf(roots, track)),
    [roots, openAll],
  );

  // A link from a finding names its event by store row: once found, use the timeline's own id
  // and open the tracks down to it.
  useEffect(() => {
    const event = details?.event;
    if (event && selection?.includes(":@")) {
      // Once per link: the fetched event tells which timeline event the store row is.
      reveal(event.track);
      setSelection(event.id);
    }
  }, [details, selection, reveal, setSelection]);

  const onSelect = useCallback(
    (hit: Hit | null) => setSelection(hit?.type === "event" ? eventId(hit.part, hit.idx) : null),
    [setSelection],
  );
  const onFocusSelection = useCallback(() => {
    const event = details?.event;
    if (event) jumpTo(focusOn(nsBetween(originNs, event.start_ns), event.dur_ns, bounds));
  }, [details, originNs, bounds, jumpTo]);
  const onPickSearch = useCallback(
    (pick: SearchPick) => {
      reveal(pick.track);
      setSelection(pick.id);
      jumpTo(focusOn(nsBetween(originNs, pick.startNs), pick.durNs, bounds));
    },
    [reveal, setSelection, jumpTo, originNs, bounds],
  );
  const onPickConnection = useCallback(
    (c: Connection) => {
      setSelection(eventId(c.part, c.run));
      if (liveView)
        jumpTo(centreOn(liveView, (c.launchStartNs + c.runStartNs + c.runDurNs) / 2, bounds));
    },
    [setSelection, jumpTo, liveView, bounds],
  );

  return {
    /** The selected event's fields, with its launch and run; undefined until they arrive. */
    details,
    error: query.error,
    isLoading: query.isLoading,
    onSelect,
    onFocusSelection,
    onPickSearch,
    onPickConnection,
  };
}
