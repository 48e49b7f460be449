/** The font of every label drawn on a canvas (timeline events and steps, flame graph frames). */
export const LABEL_FONT = "11px system-ui, sans-serif";
/** Narrower than this, an item gets no label: a letter or two would say nothing. */
export const LABEL_MIN_PX = 30;
/** The room a label leaves on each side inside its item. */
export const LABEL_PAD_PX = 3;

/**
 * Fits labels into the room their items leave, measuring each text once: zooming redraws the
 * same names many times a second, and measureText is the slow part of drawing them.
 */
export class TextFitter {
  private readonly widths = new Map<string, number>();

  constructor(private readonly font: string = LABEL_FONT) {}

  /** The longest prefix of ``text`` (with an ellipsis) that fits in ``maxPx``; "" when none. */
  fit(ctx: CanvasRenderingContext2D, text: string, maxPx: number): string {
    let full = this.widths.get(text);
    if (full === undefined) {
      ctx.font = this.font;
      full = ctx.measureText(text).width;
      this.widths.set(text, full);
    }
    if (full <= maxPx) return text;
    const chars = Math.floor((text.length * maxPx) / full) - 1;
    return chars >= 3 ? `${text.slice(0, chars)}…` : "";
  }

  /** Draws ``text`` in the item spanning ``x0``–``x1`` at the middle height ``y``, cut to fit;
   * nothing where the item is narrower than ``LABEL_MIN_PX``. The fill style is the caller's. */
  label(ctx: CanvasRenderingContext2D, text: string, x0: number, x1: number, y: number) {
    if (x1 - x0 < LABEL_MIN_PX) return;
    const shown = this.fit(ctx, text, x1 - x0 - 2 * LABEL_PAD_PX);
    if (shown) ctx.fillText(shown, x0 + LABEL_PAD_PX, y);
  }

  /** Sets the context up for ``label``: the font, and text centred on its ``y``. */
  prepare(ctx: CanvasRenderingContext2D) {
    ctx.font = this.font;
    ctx.textBaseline = "middle";
  }
}
