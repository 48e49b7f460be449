/**
 * The timeline canvas: sizing, mouse and keyboard input, and one requestAnimationFrame per
 * redraw. The live view is kept in a ref so that panning and zooming redraw without rendering
 * React; the page hears about the view (to fetch data and update the URL) a few times a second.
 */
import { useCallback, useEffect, useRef } from "react";
import { fitCanvas } from "../canvas/surface";
import { type Bounds, type View, panBy, pxToTime, spanNs, zoomAt } from "./coords";
import { frameStats } from "./frameStats";
import { HEADER_PX, type Hit, type Layout, hitTest, rowsBetween } from "./layout";
import { type Scene, TimelineRenderer } from "./renderer";

type Props = {
  layout: Layout;
  /** The view the page asks for; changing ``viewVersion`` makes the canvas jump to it. */
  view: View;
  viewVersion: number;
  bounds: Bounds;
  scrollTop: number;
  scene: Scene;
  /** The live view and the plot's size in CSS pixels, a few times a second while it moves. */
  onViewChange: (view: View, widthPx: number, heightPx: number) => void;
  onScrollBy: (deltaPx: number) => void;
  onHover: (hit: Hit | null, clientX: number, clientY: number) => void;
  onSelect: (hit: Hit | null) => void;
  onFocusSelection: () => void;
  onToggleShortcuts: () => void;
  /** A range selection made (times relative to the origin), or cleared (Escape). */
  onArea: (area: Area | null) => void;
};

export type Area = { startNs: number; endNs: number; tracks: string[] };

const ZOOM_PER_S = 3.0; // w/s: the span shrinks or grows e^3 ≈ 20 times per second held
const PAN_PER_S = 0.8; // a/d: 80% of the span per second held
const REPORT_MS = 120;
const KEYS_IN = new Set(["w", "ArrowUp"]);
const KEYS_OUT = new Set(["s", "ArrowDown"]);
const KEYS_LEFT = new Set(["a", "ArrowLeft"]);
const KEYS_RIGHT = new Set(["d", "ArrowRight"]);

function typingInField(target: EventTarget | null): boolean {
  return (
    target instanceof HTMLElement &&
    (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName))
  );
}

type Mark = { t: number; y: number };

/** The range between two places (time, height in the rows' content) and the tracks between. */
function areaBetween(layout: Layout, a: Mark, b: Mark): Area | null {
  const tracks = rowsBetween(layout, a.y, b.y + 1);
  const startNs = Math.round(Math.min(a.t, b.t));
  const endNs = Math.round(Math.max(a.t, b.t));
  return tracks.length && endNs > startNs ? { startNs, endNs, tracks } : null;
}

export function TimelineCanvas(props: Props) {
  const containerRef = useRef<HTMLDivElement>(null);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const renderer = useRef(new TimelineRenderer());
  const viewRef = useRef(props.view);
  const sizeRef = useRef({ width: 0, height: 0 });
  const propsRef = useRef(props);
  const frame = useRef(0);
  const lastReport = useRef(0);
  const held = useRef(new Set<string>());
  const lastTick = useRef(0);
  const drag = useRef<{ x: number; y: number; view: View; moved: boolean } | null>(null);
  // Shift+drag selects a range: where it began (time, content height) and the range so far.
  const areaDrag = useRef<{ t: number; y: number } | null>(null);
  const draft = useRef<Area | null>(null);
  // "m" marks the time and height under the pointer; a second "m" selects between the marks.
  const pointer = useRef<{ x: number; y: number; width: number } | null>(null);
  const mark = useRef<{ t: number; y: number } | null>(null);

  useEffect(() => {
    propsRef.current = props;
  });

  const report = useCallback((force: boolean) => {
    const now = performance.now();
    if (force || now - lastReport.current > REPORT_MS) {
      lastReport.current = now;
      const { width, height } = sizeRef.current;
      propsRef.current.onViewChange(viewRef.current, width, height);
    }
  }, []);

  const draw = useCallback(() => {
    const canvas = canvasRef.current;
    const ctx = canvas?.getContext("2d");
    const { width, height } = sizeRef.current;
    if (!canvas || !ctx || !width || !height) return;
    const began = performance.now();
    fitCanvas(canvas, ctx, width, height);
    const { layout, scrollTop, scene } = propsRef.current;
    const shown = draft.current ? { ...scene, area: draft.current } : scene;
    renderer.current.render(
      ctx,
      layout,
      { view: viewRef.current, widthPx: width, heightPx: height, scrollTop },
      shown,
    );
    const took = performance.now() - began;
    frameStats.frames.push(took);
    if (frameStats.frames.length > 2000) frameStats.frames.splice(0, 1000);
    if (scene.data && frameStats.firstDataPaintMs === null)
      frameStats.firstDataPaintMs = performance.now();
    // What a browser test or the first-views bench waits on: data is on screen.
    if (scene.data && !canvas.dataset.drawn) canvas.dataset.drawn = "data";
  }, []);

  const tick = useCallback(() => {
    const now = performance.now();
    const dt = Math.min((now - (lastTick.current || now)) / 1000, 0.05);
    lastTick.current = now;
    const keys = held.current;
    const { bounds } = propsRef.current;
    let view = viewRef.current;
    const zoom = [...keys].some((k) => KEYS_IN.has(k))
      ? -1
      : [...keys].some((k) => KEYS_OUT.has(k))
        ? 1
        : 0;
    if (zoom)
      view = zoomAt(
        view,
        Math.exp(zoom * ZOOM_PER_S * dt),
        (view.startNs + view.endNs) / 2,
        bounds,
      );
    const pan = [...keys].some((k) => KEYS_RIGHT.has(k))
      ? 1
      : [...keys].some((k) => KEYS_LEFT.has(k))
        ? -1
        : 0;
    if (pan) view = panBy(view, pan * PAN_PER_S * dt * spanNs(view), bounds);
    viewRef.current = view;
    report(false);
  }, [report]);

  const schedule = useCallback(() => {
    if (frame.current) return;
    // While a key is held the view moves every frame, so the frame schedules the next one.
    const run = () => {
      frame.current = 0;
      if (held.current.size) tick();
      draw();
      if (held.current.size) frame.current = requestAnimationFrame(run);
    };
    frame.current = requestAnimationFrame(run);
  }, [draw, tick]);

  // Jump to a view the page asked for (search result, connection, "f").
  useEffect(() => {
    viewRef.current = props.view;
    report(true);
    schedule();
    // eslint-disable-next-line react-hooks/exhaustive-deps -- only a new version moves the view
  }, [props.viewVersion, report, schedule]);

  // Anything else the page changed (data, layout, scroll, selection) only needs a redraw.
  useEffect(() => schedule(), [props.layout, props.scene, props.scrollTop, schedule]);

  useEffect(() => {
    const container = containerRef.current;
    const canvas = canvasRef.current;
    if (!container || !canvas) return;
    const observer = new ResizeObserver(() => {
      const rect = container.getBoundingClientRect();
      sizeRef.current = { width: rect.width, height: rect.height };
      canvas.style.width = `${rect.width}px`;
      canvas.style.height = `${rect.height}px`;
      report(true);
      schedule();
    });
    observer.observe(container);
    return () => observer.disconnect();
  }, [report, schedule]);

  useEffect(() => {
    const canvas = canvasRef.current;
    if (!canvas) return;
    const onWheel = (event: WheelEvent) => {
      event.preventDefault();
      const rect = canvas.getBoundingClientRect();
      const { bounds } = propsRef.current;
      const view = viewRef.current;
      const horizontal = event.shiftKey || Math.abs(event.deltaX) > Math.abs(event.deltaY);
      if (horizontal) {
        const deltaPx = event.shiftKey ? event.deltaY : event.deltaX;
        viewRef.current = panBy(view, (deltaPx / rect.width) * spanNs(view), bounds);
      } else {
        const anchor = pxToTime(view, rect.width, event.clientX - rect.left);
        viewRef.current = zoomAt(view, Math.exp(event.deltaY * 0.0015), anchor, bounds);
      }
      report(false);
      schedule();
    };
    canvas.addEventListener("wheel", onWheel, { passive: false });
    return () => canvas.removeEventListener("wheel", onWheel);
  }, [report, schedule]);

  useEffect(() => {
    const onKeyDown = (event: KeyboardEvent) => {
      if (typingInField(event.target) || event.ctrlKey || event.metaKey || event.altKey) return;
      const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
      if ([KEYS_IN, KEYS_OUT, KEYS_LEFT, KEYS_RIGHT].some((keys) => keys.has(key))) {
        event.preventDefault();
        if (!held.current.has(key)) {
          held.current.add(key);
          lastTick.current = 0;
          schedule();
        }
      } else if (key === "f") {
        propsRef.current.onFocusSelection();
      } else if (key === "?") {
        propsRef.current.onToggleShortcuts();
      } else if (key === "m" && pointer.current) {
        const { x, y, width } = pointer.current;
        const here = {
          t: pxToTime(viewRef.current, width, x),
          y: Math.max(y - HEADER_PX, 0) + propsRef.current.scrollTop,
        };
        const first = mark.current;
        mark.current = first ? null : here;
        if (first) propsRef.current.onArea(areaBetween(propsRef.current.layout, first, here));
      } else if (key === "Escape") {
        mark.current = null;
        propsRef.current.onSelect(null);
        propsRef.current.onArea(null);
      }
    };
    const onKeyUp = (event: KeyboardEvent) => {
      const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
      if (held.current.delete(key) && !held.current.size) report(true);
    };
    const onBlur = () => held.current.clear();
    window.addEventListener("keydown", onKeyDown);
    window.addEventListener("keyup", onKeyUp);
    window.addEventListener("blur", onBlur);
    return () => {
      window.removeEventListener("keydown", onKeyDown);
      window.removeEventListener("keyup", onKeyUp);
      window.removeEventListener("blur", onBlur);
    };
  }, [report, schedule]);

  const locate = (event: React.MouseEvent) => {
    const rect = canvasRef.current!.getBoundingClientRect();
    return { x: event.clientX - rect.left, y: event.clientY - rect.top, width: rect.width };
  };

  const contentY = (y: number) => Math.max(y - HEADER_PX, 0) + propsRef.current.scrollTop;

  const hitAt = (x: number, y: number, width: number): Hit | null => {
    if (y < HEADER_PX) return null;
    const { layout, scene, scrollTop } = propsRef.current;
    return hitTest(layout, scene.data, viewRef.current, width, x, y - HEADER_PX + scrollTop);
  };

  return (
    <div ref={containerRef} className="tl-canvas">
      <canvas
        ref={canvasRef}
        data-testid="timeline-canvas"
        onMouseDown={(event) => {
          if (event.button !== 0) return;
          const { x, y, width } = locate(event);
          if (event.shiftKey) {
            areaDrag.current = { t: pxToTime(viewRef.current, width, x), y: contentY(y) };
            return;
          }
          drag.current = { x, y, view: viewRef.current, moved: false };
        }}
        onMouseMove={(event) => {
          const { x, y, width } = locate(event);
          pointer.current = { x, y, width };
          if (areaDrag.current && event.buttons & 1) {
            draft.current = areaBetween(propsRef.current.layout, areaDrag.current, {
              t: pxToTime(viewRef.current, width, x),
              y: contentY(y),
            });
            props.onHover(null, 0, 0);
            schedule();
            return;
          }
          const dragging = drag.current;
          if (dragging && event.buttons & 1) {
            const dx = x - dragging.x;
            const dy = y - dragging.y;
            if (!dragging.moved && Math.hypot(dx, dy) < 3) return;
            if (!dragging.moved) dragging.moved = true;
            viewRef.current = panBy(
              dragging.view,
              (-dx / width) * spanNs(dragging.view),
              propsRef.current.bounds,
            );
            props.onScrollBy(-dy);
            dragging.y = y;
            props.onHover(null, 0, 0);
            report(false);
            schedule();
            return;
          }
          props.onHover(hitAt(x, y, width), event.clientX, event.clientY);
        }}
        onMouseUp={(event) => {
          if (areaDrag.current) {
            const { x, y, width } = locate(event);
            const area = areaBetween(propsRef.current.layout, areaDrag.current, {
              t: pxToTime(viewRef.current, width, x),
              y: contentY(y),
            });
            areaDrag.current = null;
            draft.current = null;
            if (area) props.onArea(area);
            schedule();
            return;
          }
          const dragging = drag.current;
          drag.current = null;
          if (!dragging) return;
          if (dragging.moved) {
            report(true);
            return;
          }
          const { x, y, width } = locate(event);
          props.onSelect(hitAt(x, y, width));
        }}
        onMouseLeave={() => props.onHover(null, 0, 0)}
      />
    </div>
  );
}
