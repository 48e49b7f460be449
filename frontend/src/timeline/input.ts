/**
 * The canvas's input state as plain classes, apart from React and drawing: the keys held to zoom
 * and pan, and what the mouse is doing (a click, a pan drag, a range drag, the "m" marks).
 * Positions are CSS pixels in the canvas (``x``, ``y``), times nanoseconds from the origin,
 * heights pixels in the rows' content (``y`` of a ``Place``, scrolled rows included).
 */
import { type Bounds, type View, panBy, spanNs, zoomAt } from "./coords";
import { type Layout, rowsBetween } from "./layout";

export type Area = { startNs: number; endNs: number; tracks: string[] };
/** A point of the plot: its time and its height in the rows' content. */
export type Place = { t: number; y: number };

const ZOOM_PER_S = 3.0; // w/s: the span shrinks or grows e^3 ≈ 20 times per second held
const PAN_PER_S = 0.8; // a/d: 80% of the span per second held
const LONGEST_TICK_S = 0.05; // a stalled frame moves the view no further than this
const KEYS_IN = new Set(["w", "ArrowUp"]);
const KEYS_OUT = new Set(["s", "ArrowDown"]);
const KEYS_LEFT = new Set(["a", "ArrowLeft"]);
const KEYS_RIGHT = new Set(["d", "ArrowRight"]);
const NAVIGATION = new Set([...KEYS_IN, ...KEYS_OUT, ...KEYS_LEFT, ...KEYS_RIGHT]);
/** A press that moves less than this is a click, not a drag. */
const DRAG_MIN_PX = 3;

/** A key as the shortcuts name it: letters in lower case whatever Shift or Caps Lock say. */
export function keyName(event: { key: string }): string {
  return event.key.length === 1 ? event.key.toLowerCase() : event.key;
}

export function isNavigationKey(key: string): boolean {
  return NAVIGATION.has(key);
}

/** The range between two places and the tracks between them; null when it spans nothing. */
export function areaBetween(layout: Layout, a: Place, b: Place): Area | null {
  const tracks = rowsBetween(layout, a.y, b.y + 1);
  const startNs = Math.round(Math.min(a.t, b.t));
  const endNs = Math.round(Math.max(a.t, b.t));
  return tracks.length && endNs > startNs ? { startNs, endNs, tracks } : null;
}

/** The zoom and pan keys held down, and how far they move the view while held. */
export class HeldKeys {
  private readonly keys = new Set<string>();
  private lastTickMs: number | null = null;

  get any(): boolean {
    return this.keys.size > 0;
  }

  /** Holds a navigation key; false for any other key, and for a key already held (repeats). */
  press(key: string): boolean {
    if (!NAVIGATION.has(key) || this.keys.has(key)) return false;
    this.keys.add(key);
    this.lastTickMs = null;
    return true;
  }

  /** True when this release let go of the last key held: the view has come to rest. */
  release(key: string): boolean {
    return this.keys.delete(key) && this.keys.size === 0;
  }

  /** The window lost focus: its key-ups will not come. */
  clear() {
    this.keys.clear();
  }

  /** The view after holding the keys since the last tick (none before the first tick). */
  tick(view: View, nowMs: number, bounds: Bounds): View {
    const dt = Math.min((nowMs - (this.lastTickMs ?? nowMs)) / 1000, LONGEST_TICK_S);
    this.lastTickMs = nowMs;
    const zoom = this.holds(KEYS_IN) ? -1 : this.holds(KEYS_OUT) ? 1 : 0;
    let next = view;
    if (zoom)
      next = zoomAt(
        next,
        Math.exp(zoom * ZOOM_PER_S * dt),
        (next.startNs + next.endNs) / 2,
        bounds,
      );
    const pan = this.holds(KEYS_RIGHT) ? 1 : this.holds(KEYS_LEFT) ? -1 : 0;
    if (pan) next = panBy(next, pan * PAN_PER_S * dt * spanNs(next), bounds);
    return next;
  }

  private holds(keys: Set<string>): boolean {
    for (const key of this.keys) if (keys.has(key)) return true;
    return false;
  }
}

/** What a move with the button down did. */
export type DragStep =
  | { kind: "pan"; view: View; scrollByPx: number }
  | { kind: "area"; draft: Area | null }
  /** Pressed but not yet moved far enough to be a drag. */
  | { kind: "still" };

/** What letting the button go did. */
export type Release = { kind: "click" } | { kind: "panned" } | { kind: "area"; area: Area | null };

/**
 * The mouse on the plot: a press starts a pan (drag) or, with Shift, a range (shift-drag); a
 * press released where it began is a click. "m" marks the place under the pointer, and a second
 * "m" selects the range between the two marks.
 */
export class PointerGesture {
  /** Where the pointer last was over the canvas (for "m"). */
  pointer: { x: number; y: number; widthPx: number } | null = null;
  private pan: { x: number; y: number; view: View; moved: boolean } | null = null;
  private areaFrom: Place | null = null;
  private areaDraft: Area | null = null;
  private mark: Place | null = null;

  /** The range a shift-drag spans so far, drawn until the button is let go. */
  get draft(): Area | null {
    return this.areaDraft;
  }

  press(x: number, y: number, place: Place, shift: boolean, view: View) {
    if (shift) this.areaFrom = place;
    else this.pan = { x, y, view, moved: false };
  }

  /** A move with the button down; null when no press of this canvas is under way. */
  drag(x: number, y: number, widthPx: number, place: Place, layout: Layout, bounds: Bounds) {
    if (this.areaFrom) {
      this.areaDraft = areaBetween(layout, this.areaFrom, place);
      return { kind: "area", draft: this.areaDraft } satisfies DragStep;
    }
    const pan = this.pan;
    if (!pan) return null;
    const dx = x - pan.x;
    const dy = y - pan.y;
    if (!pan.moved && Math.hypot(dx, dy) < DRAG_MIN_PX) return { kind: "still" } satisfies DragStep;
    pan.moved = true;
    // Time follows the whole drag from where it began; rows scroll by each move's height.
    pan.y = y;
    const view = panBy(pan.view, (-dx / widthPx) * spanNs(pan.view), bounds);
    return { kind: "pan", view, scrollByPx: -dy } satisfies DragStep;
  }

  /** The button let go (or the drag given up, ``place`` null); null when nothing was pressed. */
  release(place: Place | null, layout: Layout): Release | null {
    const areaFrom = this.areaFrom;
    const pan = this.pan;
    this.areaFrom = null;
    this.areaDraft = null;
    this.pan = null;
    if (areaFrom) return { kind: "area", area: place && areaBetween(layout, areaFrom, place) };
    if (!pan) return null;
    return pan.moved ? { kind: "panned" } : { kind: "click" };
  }

  /** "m" at ``place``: the first marks it (undefined), the second gives the range between. */
  markAt(place: Place, layout: Layout): Area | null | undefined {
    const first = this.mark;
    this.mark = first ? null : place;
    return first ? areaBetween(layout, first, place) : undefined;
  }

  clearMark() {
    this.mark = null;
  }
}
