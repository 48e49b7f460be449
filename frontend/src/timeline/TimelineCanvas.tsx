/**
 * The timeline canvas: sizing, wiring mouse and keyboard events to the input state (``input.ts``),
 * and one requestAnimationFrame per redraw. The live view is kept in a ref so that panning and
 * zooming redraw without rendering React; the page hears about the view (to fetch data and
 * update the URL) a few times a second.
 */
import { useCallback, useEffect, useRef } from "react";
import { fitCanvas } from "../canvas/surface";
import { type Bounds, type View, panBy, pxToTime, spanNs, zoomAt } from "./coords";
import { frameStats } from "./frameStats";
import { type Area, HeldKeys, PointerGesture, isNavigationKey, keyName } from "./input";
import { HEADER_PX, type Hit, type Layout, hitTest } from "./layout";
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

export type { Area };

const REPORT_MS = 120;

function typingInField(target: EventTarget | null): boolean {
  return (
    target instanceof HTMLElement &&
    (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName))
  );
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
  const keys = useRef(new HeldKeys());
  const gesture = useRef(new PointerGesture());

  useEffect(() => {
    propsRef.current = props;
  });

  /** The time and content height under the canvas point (x, y). */
  const placeAt = useCallback(
    (x: number, y: number, widthPx: number) => ({
      t: pxToTime(viewRef.current, widthPx, x),
      y: Math.max(y - HEADER_PX, 0) + propsRef.current.scrollTop,
    }),
    [],
  );

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
    const draft = gesture.current.draft;
    const shown = draft ? { ...scene, area: draft } : scene;
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
    viewRef.current = keys.current.tick(
      viewRef.current,
      performance.now(),
      propsRef.current.bounds,
    );
    report(false);
  }, [report]);

  const schedule = useCallback(() => {
    if (frame.current) return;
    // While a key is held the view moves every frame, so the frame schedules the next one.
    const run = () => {
      frame.current = 0;
      if (keys.current.any) tick();
      draw();
      if (keys.current.any) frame.current = requestAnimationFrame(run);
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
      const key = keyName(event);
      if (isNavigationKey(key)) {
        event.preventDefault();
        if (keys.current.press(key)) schedule();
      } else if (key === "f") {
        propsRef.current.onFocusSelection();
      } else if (key === "?") {
        propsRef.current.onToggleShortcuts();
      } else if (key === "m" && gesture.current.pointer) {
        const { x, y, widthPx } = gesture.current.pointer;
        const area = gesture.current.markAt(placeAt(x, y, widthPx), propsRef.current.layout);
        if (area !== undefined) propsRef.current.onArea(area);
      } else if (key === "Escape") {
        gesture.current.clearMark();
        propsRef.current.onSelect(null);
        propsRef.current.onArea(null);
      }
    };
    const onKeyUp = (event: KeyboardEvent) => {
      if (keys.current.release(keyName(event))) report(true);
    };
    const onBlur = () => keys.current.clear();
    window.addEventListener("keydown", onKeyDown);
    window.addEventListener("keyup", onKeyUp);
    window.addEventListener("blur", onBlur);
    return () => {
      window.removeEventListener("keydown", onKeyDown);
      window.removeEventListener("keyup", onKeyUp);
      window.removeEventListener("blur", onBlur);
    };
  }, [report, schedule, placeAt]);

  const locate = (event: React.MouseEvent) => {
    const rect = canvasRef.current!.getBoundingClientRect();
    const x = event.clientX - rect.left;
    const y = event.clientY - rect.top;
    return { x, y, widthPx: rect.width, place: placeAt(x, y, rect.width) };
  };

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
          const { x, y, place } = locate(event);
          gesture.current.press(x, y, place, event.shiftKey, viewRef.current);
        }}
        onMouseMove={(event) => {
          const { x, y, widthPx, place } = locate(event);
          gesture.current.pointer = { x, y, widthPx };
          const step =
            event.buttons & 1
              ? gesture.current.drag(x, y, widthPx, place, props.layout, props.bounds)
              : null;
          if (step?.kind === "still") return;
          if (step?.kind === "pan") {
            viewRef.current = step.view;
            props.onScrollBy(step.scrollByPx);
            report(false);
          }
          if (step) {
            props.onHover(null, 0, 0);
            schedule();
            return;
          }
          props.onHover(hitAt(x, y, widthPx), event.clientX, event.clientY);
        }}
        onMouseUp={(event) => {
          const { x, y, widthPx, place } = locate(event);
          const released = gesture.current.release(place, props.layout);
          if (released?.kind === "area") {
            if (released.area) props.onArea(released.area);
            schedule();
          } else if (released?.kind === "panned") {
            report(true);
          } else if (released?.kind === "click") {
            props.onSelect(hitAt(x, y, widthPx));
          }
        }}
        onMouseLeave={() => props.onHover(null, 0, 0)}
      />
    </div>
  );
}
