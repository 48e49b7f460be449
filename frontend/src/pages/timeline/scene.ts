import type { EventDetails, TimelineEvent } from "../../api/timeline";
import { type Step, type ViewportData, nsBetween } from "../../timeline/model";
import type { Placed, Scene } from "../../timeline/renderer";
import type { Area } from "./urlState";

type Located = Pick<TimelineEvent, "track" | "depth" | "start_ns" | "dur_ns">;

/** What the canvas draws over the tracks, in its times (ns after the job's origin): the
 * selected event and the arrow from its launch to its run, the range selection, and the
 * events of the range's picked row. */
export function timelineScene({
  originNs,
  data,
  steps,
  selected,
  area,
  highlights,
}: {
  originNs: string;
  data: ViewportData | null;
  steps: Step[];
  selected: EventDetails | undefined;
  area: Area | null;
  highlights: Located[];
}): Scene {
  const place = (e: Located): Placed => ({
    track: e.track,
    depth: e.depth,
    startNs: nsBetween(originNs, e.start_ns),
    durNs: e.dur_ns,
  });
  return {
    data,
    steps,
    selection: selected ? place(selected.event) : null,
    arrows:
      selected?.launch && selected.run
        ? [{ from: place(selected.launch), to: place(selected.run) }]
        : [],
    area: area && {
      startNs: nsBetween(originNs, area.startNs),
      endNs: nsBetween(originNs, area.endNs),
      tracks: area.tracks,
    },
    highlights: highlights.map(place),
  };
}
