import { useEffect, useMemo, useState } from "react";
import { fetchViewport } from "../../api/timeline";
import { type View, type ViewportRequest, covers, planRequest } from "../../timeline/coords";
import { type ViewportData, absoluteNs, decodeViewport } from "../../timeline/model";

type Loaded = { request: ViewportRequest; ids: string[]; data: ViewportData };

/**
 * The viewport data for ``view``: refetched only when the view leaves the fetched window,
 * changes level, or needs tracks the last answer lacks. Until the new answer arrives the last
 * one stays on screen, drawn at the current zoom.
 */
export function useViewportData(
  jobId: number,
  originNs: string,
  view: View | null,
  widthPx: number,
  ids: string[],
) {
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const idsKey = ids.join(",");
  const wanted = useMemo(() => {
    if (!view || widthPx <= 0 || !idsKey) return null;
    if (
      loaded &&
      covers(loaded.request, view, widthPx) &&
      idsKey.split(",").every((id) => loaded.ids.includes(id))
    ) {
      return null;
    }
    return planRequest(view, widthPx);
  }, [view, widthPx, idsKey, loaded]);
  const wantedKey = wanted ? `${wanted.startNs}:${wanted.endNs}:${wanted.k}:${idsKey}` : null;

  useEffect(() => {
    if (!wanted) return;
    const abort = new AbortController();
    const trackIds = idsKey.split(",");
    fetchViewport(
      jobId,
      {
        startNs: absoluteNs(originNs, wanted.startNs),
        endNs: absoluteNs(originNs, wanted.endNs),
        widthPx: wanted.widthPx,
        tracks: trackIds,
      },
      abort.signal,
    )
      .then((buffer) => {
        setLoaded({ request: wanted, ids: trackIds, data: decodeViewport(buffer, originNs) });
        setError(null);
      })
      .catch((reason: unknown) => {
        if (!abort.signal.aborted)
          setError(reason instanceof Error ? reason : new Error(String(reason)));
      });
    return () => abort.abort();
    // The key captures everything the request depends on.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [wantedKey, jobId, originNs]);

  return { data: loaded?.data ?? null, loading: wanted !== null, error };
}
