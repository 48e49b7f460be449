import { useCallback, useState } from "react";
import type { Bounds, View } from "../../timeline/coords";
import { absoluteNs, nsBetween } from "../../timeline/model";

type AbsoluteRange = { startNs: string; endNs: string };

/**
 * The time range the canvas shows. It opens on the link's range (the whole job without one).
 * A jump (Whole job, a search result, focusing the selection) asks it for a view, each a new
 * version, so asking twice for the same view still moves it back there. ``shown`` is what it
 * shows now, as the canvas reports it after each pan and zoom; ``onShown`` hears it in
 * absolute times, for the link.
 */
export function useCanvasView(
  originNs: string,
  bounds: Bounds,
  initialRange: AbsoluteRange | null,
  onShown: (range: AbsoluteRange) => void,
) {
  const [target, setTarget] = useState(() => ({
    view: initialRange
      ? {
          startNs: nsBetween(originNs, initialRange.startNs),
          endNs: nsBetween(originNs, initialRange.endNs),
        }
      : { startNs: bounds.startNs, endNs: bounds.endNs },
    version: 0,
  }));
  const [shown, setShown] = useState<{
    view: View;
    /** The view in absolute times, as links and exports name it. */
    range: AbsoluteRange;
    width: number;
    height: number;
  } | null>(null);
  const jumpTo = useCallback(
    (view: View) => setTarget((t) => ({ view, version: t.version + 1 })),
    [],
  );
  const onViewChange = useCallback(
    (view: View, width: number, height: number) => {
      const range = {
        startNs: absoluteNs(originNs, view.startNs),
        endNs: absoluteNs(originNs, view.endNs),
      };
      setShown({ view, range, width, height });
      onShown(range);
    },
    [originNs, onShown],
  );
  return { target, jumpTo, shown, onViewChange };
}
