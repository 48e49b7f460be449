import { useEffect, useMemo, useRef } from "react";
import { useSearchParams } from "react-router";
import { type TimelineUrlState, parseTimelineUrl, writeTimelineUrl } from "./urlState";

/** How long the shown state must settle before the address follows it: panning does not
 * write a history entry's worth of URLs per second. */
const URL_WRITE_MS = 400;

/** The link the page opened with, read once: from then on the page owns the state. */
export function useInitialTimelineUrl(): TimelineUrlState {
  const [params] = useSearchParams();
  // eslint-disable-next-line react-hooks/exhaustive-deps -- the first address only
  return useMemo(() => parseTimelineUrl(params), []);
}

/** Keeps the address bar on what is shown (view, selection, filter, expansion, range), a
 * moment after it settles, so the address is always a link to it. */
export function useTimelineUrlWriter(state: TimelineUrlState) {
  const [params, setParams] = useSearchParams();
  const next = writeTimelineUrl(state).toString();
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
}
