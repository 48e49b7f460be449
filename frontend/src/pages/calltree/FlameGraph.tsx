import { useEffect, useMemo, useRef, useState } from "react";
import { formatDuration } from "../../lib/format";
import { type Frames, layoutFlame } from "./flame";
import { fitCanvas } from "../../canvas/surface";
import { FlameRenderer, ROW_PX, hitTest } from "./flameRenderer";

type Props = {
  frames: Frames;
  names: string[];
  matches: Set<number>;
  selected: number | null;
  onSelect: (frame: number) => void;
};

/** The flame graph: click a frame to zoom on it and list its occurrences, the wheel zooms
 * out to the parent (or in on the frame under the pointer). */
export function FlameGraph({ frames, names, matches, selected, onSelect }: Props) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const renderer = useRef(new FlameRenderer());
  const [zoom, setZoom] = useState<number | null>(null);
  const [width, setWidth] = useState(1000);
  const [tip, setTip] = useState<{ x: number; y: number; frame: number } | null>(null);
  const rects = useMemo(() => layoutFlame(frames, zoom, 1 / (width * 4)), [frames, zoom, width]);
  const height = (Math.max(0, ...rects.map((r) => r.depth)) + 1) * ROW_PX;

  useEffect(() => {
    const el = canvas.current;
    if (!el) return;
    const observer = new ResizeObserver(() => setWidth(el.clientWidth || 1000));
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  useEffect(() => {
    const el = canvas.current;
    const ctx = el?.getContext("2d");
    if (!el || !ctx) return;
    fitCanvas(el, ctx, width, height);
    renderer.current.render(ctx, rects, width, {
      names,
      nameOf: (f) => frames.name[f]!,
      matches,
      selected,
    });
    el.dataset.drawn = "data"; // what a browser test or the first-views bench waits on
  }, [rects, width, height, names, frames, matches, selected]);

  const at = (e: React.MouseEvent) => {
    const box = canvas.current!.getBoundingClientRect();
    return { x: e.clientX - box.left, y: e.clientY - box.top };
  };
  const total = frames.parent.reduce((s, p, i) => (p < 0 ? s + frames.total_ns[i]! : s), 0) || 1;

  return (
    <div className="flame">
      <div className="flame-tools">
        <button type="button" onClick={() => setZoom(null)} disabled={zoom === null}>
          Reset zoom
        </button>
      </div>
      <div className="flame-area">
        <canvas
          ref={canvas}
          aria-label="Flame graph"
          data-testid="flame-graph"
          style={{ width: "100%", height }}
          onClick={(e) => {
            const p = at(e);
            const hit = hitTest(rects, width, p.x, p.y);
            if (hit) {
              setZoom(hit.frame);
              onSelect(hit.frame);
            }
          }}
          onWheel={(e) => {
            const p = at(e);
            if (e.deltaY > 0 && zoom !== null)
              setZoom(frames.parent[zoom]! >= 0 ? frames.parent[zoom]! : null);
            if (e.deltaY < 0) {
              const hit = hitTest(rects, width, p.x, p.y);
              if (hit) setZoom(hit.frame);
            }
          }}
          onMouseMove={(e) => {
            const p = at(e);
            const hit = hitTest(rects, width, p.x, p.y);
            setTip(hit ? { ...p, frame: hit.frame } : null);
          }}
          onMouseLeave={() => setTip(null)}
        />
        {tip && (
          <div className="flame-tip" role="tooltip" style={{ left: tip.x + 12, top: tip.y + 12 }}>
            <strong>{names[frames.name[tip.frame]!]!}</strong>
            <div>
              Total {formatDuration(frames.total_ns[tip.frame]!)} (
              {((100 * frames.total_ns[tip.frame]!) / total).toFixed(1)} %)
            </div>
            <div>
              Self {formatDuration(frames.self_ns[tip.frame]!)} · {frames.count[tip.frame]!} calls
            </div>
          </div>
        )}
      </div>
    </div>
  );
}
