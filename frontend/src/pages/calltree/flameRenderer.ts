import { colourFor } from "../../lib/colour";
import type { Rect } from "./flame";

export const ROW_PX = 18;

export type FlameStyle = {
  names: string[];
  nameOf: (frame: number) => number;
  matches: Set<number>;
  selected: number | null;
};

/** Draws the rectangles on a canvas `width` CSS pixels wide. */
export function drawFlame(
  ctx: CanvasRenderingContext2D,
  rects: Rect[],
  width: number,
  style: FlameStyle,
) {
  ctx.clearRect(0, 0, ctx.canvas.width, ctx.canvas.height);
  ctx.font = "11px sans-serif";
  ctx.textBaseline = "middle";
  const searching = style.matches.size > 0;
  for (const r of rects) {
    const x = r.x0 * width;
    const w = Math.max((r.x1 - r.x0) * width - 1, 0.5);
    const y = r.depth * ROW_PX;
    const name = style.names[style.nameOf(r.frame)]!;
    const hit = style.matches.has(r.frame);
    // While searching, what does not match fades; a match stands out in its own colour.
    ctx.globalAlpha = searching && !hit ? 0.3 : 1;
    ctx.fillStyle = hit ? "hsl(200, 85%, 55%)" : colourFor(name);
    ctx.fillRect(x, y, w, ROW_PX - 1);
    ctx.globalAlpha = 1;
    if (r.frame === style.selected) {
      ctx.strokeStyle = "#000";
      ctx.lineWidth = 2;
      ctx.strokeRect(x + 1, y + 1, w - 2, ROW_PX - 3);
    }
    if (w > 30) {
      ctx.fillStyle = "#111";
      ctx.save();
      ctx.beginPath();
      ctx.rect(x, y, w, ROW_PX);
      ctx.clip();
      ctx.fillText(name, x + 3, y + ROW_PX / 2);
      ctx.restore();
    }
  }
}

export function hitTest(rects: Rect[], width: number, x: number, y: number): Rect | null {
  const depth = Math.floor(y / ROW_PX);
  const at = x / width;
  return rects.find((r) => r.depth === depth && r.x0 <= at && at < r.x1) ?? null;
}
