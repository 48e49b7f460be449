import { type RefObject, useEffect, useState } from "react";
import { useTimelineEvent } from "../../api/timeline";
import { formatDuration } from "../../lib/format";
import { useDebounced } from "../../lib/useDebounced";
import type { Hit } from "../../timeline/layout";
import { eventId, kindName } from "../../timeline/model";
import { formatDims, formatOffset } from "./format";

export type HoverState = { hit: Hit; x: number; y: number };

/** Hover changes at mouse speed; only this small component re-renders for it. The canvas's
 * hover calls ``setterRef.current``, which this component points at its own state. */
export function HoverLayer({
  jobId,
  setterRef,
}: {
  jobId: number;
  setterRef: RefObject<(hover: HoverState | null) => void>;
}) {
  const [hover, setHover] = useState<HoverState | null>(null);
  useEffect(() => {
    setterRef.current = setHover;
  }, [setterRef]);
  return hover ? (
    <Tooltip jobId={jobId} hit={hover.hit} clientX={hover.x} clientY={hover.y} />
  ) : null;
}

/** How long the pointer rests on an event before the server is asked for its fields: sweeping
 * across a thousand kernels asks for none of them. */
const REST_MS = 150;

type Props = { jobId: number; hit: Hit; clientX: number; clientY: number };

function Tooltip({ jobId, hit, clientX, clientY }: Props) {
  const id = hit.type === "event" ? eventId(hit.part, hit.idx) : null;
  const settled = useDebounced(id, REST_MS);
  const details = useTimelineEvent(jobId, settled === id ? settled : null);
  const event = details.data?.event;
  const style = { left: Math.min(clientX + 14, window.innerWidth - 380), top: clientY + 16 };
  return (
    <div className="tl-tooltip" style={style} role="tooltip" data-testid="timeline-tooltip">
      {hit.type === "event" && (
        <>
          <strong className="tl-tooltip-name">{hit.name}</strong>
          <dl>
            <dt>Kind</dt>
            <dd>{kindName(hit.kind)}</dd>
            <dt>Start</dt>
            <dd>{formatOffset(hit.startNs)}</dd>
            <dt>Duration</dt>
            <dd>{formatDuration(hit.durNs)}</dd>
            <dt>Track</dt>
            <dd>{hit.row.node.label}</dd>
            {event?.stream !== undefined && (
              <>
                <dt>Stream</dt>
                <dd>{event.stream}</dd>
              </>
            )}
            {event?.grid && (
              <>
                <dt>Grid / block</dt>
                <dd>
                  {formatDims(event.grid)} / {formatDims(event.block)}
                </dd>
              </>
            )}
            {event?.bytes !== undefined && (
              <>
                <dt>Bytes</dt>
                <dd>{event.bytes.toLocaleString("en-US")}</dd>
              </>
            )}
            {event?.correlation !== undefined && (
              <>
                <dt>Correlation</dt>
                <dd>{event.correlation}</dd>
              </>
            )}
          </dl>
        </>
      )}
      {hit.type === "block" && (
        <>
          <strong className="tl-tooltip-name">
            {hit.count.toLocaleString("en-US")} events under a pixel
          </strong>
          <dl>
            <dt>Mostly</dt>
            <dd>{hit.name}</dd>
            <dt>Busy</dt>
            <dd>
              {formatDuration(hit.busyNs)} of {formatDuration(hit.endNs - hit.startNs)}
            </dd>
            <dt>From</dt>
            <dd>{formatOffset(hit.startNs)}</dd>
          </dl>
          <p className="muted">Zoom in to see them one by one.</p>
        </>
      )}
      {hit.type === "counter" && (
        <>
          <strong className="tl-tooltip-name">{hit.row.node.label}</strong>
          <dl>
            <dt>Mean</dt>
            <dd>
              {hit.mean.toFixed(1)} {String(hit.row.node.info?.unit ?? "")}
            </dd>
            <dt>Min – max</dt>
            <dd>
              {hit.low.toFixed(1)} – {hit.high.toFixed(1)}
            </dd>
            <dt>At</dt>
            <dd>{formatOffset(hit.timeNs)}</dd>
          </dl>
        </>
      )}
      {hit.type === "aggregate" && (
        <>
          <strong className="tl-tooltip-name">{hit.row.node.label}</strong>
          <dl>
            <dt>Events</dt>
            <dd>{hit.count.toLocaleString("en-US")}</dd>
            <dt>Busy</dt>
            <dd>{Math.round(hit.occupancy * 100)}%</dd>
          </dl>
          <p className="muted">Expand to see its tracks.</p>
        </>
      )}
    </div>
  );
}
