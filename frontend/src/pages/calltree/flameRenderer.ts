/**
 * Draws the flame graph with the canvas kit (``src/canvas``): frames filled in one path per
 * colour, labels fitted to their frames from cached widths, colours by the app's name rule.
 */
import { MATCH_FILL, nameFill } from "../../canvas/colour";
import { RectBatch } from "../../canvas/rects";
import { TextFitter } from "../../canvas/text";
import type { Rect } from "./flame";

export const ROW_PX = 18;
const LABEL_FILL = "#111";

export type FlameStyle = {
  names: string[];
  nameOf: (frame: number) => number;
  matches: Set<number>;
  selected: number | null;
};

/** A plain class (no React): keep one per flame graph, so that its text widths stay cached. */
export class FlameRenderer {
  private readonly rects = new RectBatch();
  private readonly text = new TextFitter();

  /** Draws the rectangles on a canvas ``widthPx`` CSS pixels wide. */
  render(ctx: CanvasRenderingContext2D, rects: Rect[], widthPx: number, style: FlameStyle) {
    ctx.clearRect(0, 0, ctx.canvas.width, ctx.canvas.height);
    const searching = style.matches.size > 0;
    for (const r of rects) {
      const hit = style.matches.has(r.frame);
      // While searching, what does not match fades; a match stands out in the match colour.
      const fill = hit ? MATCH_FILL : nameFill(this.name(r, style), searching);
      this.rects.add(fill, r.x0 * widthPx, r.depth * ROW_PX, this.width(r, widthPx), ROW_PX - 1);
    }
    this.rects.fill(ctx);
    this.text.prepare(ctx);
    ctx.fillStyle = LABEL_FILL;
    for (const r of rects) {
      const x = r.x0 * widthPx;
      const y = r.depth * ROW_PX + ROW_PX / 2;
      this.text.label(ctx, this.name(r, style), x, x + this.width(r, widthPx), y);
    }
    const chosen = rects.find((r) => r.frame === style.selected);
    if (chosen) {
      const w = this.width(chosen, widthPx);
      ctx.strokeStyle = "#000";
      ctx.lineWidth = 2;
      ctx.strokeRect(chosen.x0 * widthPx + 1, chosen.depth * ROW_PX + 1, w - 2, ROW_PX - 3);
    }
  }

  private name(r: Rect, style: FlameStyle): string {
    return style.names[style.nameOf(r.frame)]!;
  }

  /** A frame's width less the 1 px gap that sets it apart from its neighbour. */
  private width(r: Rect, widthPx: number): number {
    return Math.max((r.x1 - r.x0) * widthPx - 1, 0.5);
  }
}

export function hitTest(rects: Rect[], width: number, x: number, y: number): Rect | null {
  const depth = Math.floor(y / ROW_PX);
  const at = x / width;
  return rects.find((r) => r.depth === depth && r.x0 <= at && at < r.x1) ?? null;
}
