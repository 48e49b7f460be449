import { useCallback, useMemo, useState } from "react";
import { useRangeEvents, useRangeTotals } from "../../api/timeline";
import type { Area as CanvasArea } from "../../timeline/TimelineCanvas";
import { absoluteNs } from "../../timeline/model";
import type { PickedRow } from "./RangePane";
import type { Area } from "./urlState";

/**
 * The range selection (shift+drag): its totals, computed by the server, and the row of them
 * picked, whose events are outlined. A new range drops the picked row: it may not be in it.
 */
export function useRangeSelection(
  jobId: number,
  originNs: string,
  area: Area | null,
  setArea: (area: Area | null) => void,
) {
  const [picked, setPicked] = useState<PickedRow | null>(null);
  const totals = useRangeTotals(jobId, area);
  const pickedArea = useMemo(
    () => (area && picked ? { ...area, tracks: [picked.track] } : null),
    [area, picked],
  );
  const highlighted = useRangeEvents(jobId, pickedArea, picked?.name ?? null);
  const onArea = useCallback(
    (next: CanvasArea | null) => {
      setPicked(null);
      setArea(
        next && {
          startNs: absoluteNs(originNs, next.startNs),
          endNs: absoluteNs(originNs, next.endNs),
          tracks: next.tracks,
        },
      );
    },
    [originNs, setArea],
  );
  return {
    picked,
    setPicked,
    onArea,
    totals,
    /** The picked row's events (the earliest thousand), none while no row is picked. */
    highlighted: picked ? highlighted.data : undefined,
  };
}
