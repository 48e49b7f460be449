/**
 * Fill styles on a canvas, all from the app's one name → colour rule (``lib/colour``): an item
 * named like a chart's slice or a table's row is drawn in that colour, and set apart only by
 * fading (what a search does not match, sparse merged blocks) or by the one match colour.
 */
import { colourFor } from "../lib/colour";

/** What a search matches, wherever it is drawn. */
export const MATCH_FILL = "hsl(200, 85%, 55%)";
/** How much of its colour an item keeps when it is faded. */
export const FADED_ALPHA = 0.3;

const faded = new Map<string, string>();

/** The fill of an item named ``name``; ``fade``: the same colour at ``FADED_ALPHA``. */
export function nameFill(name: string, fade = false): string {
  const colour = colourFor(name);
  if (!fade) return colour;
  let style = faded.get(colour);
  if (style === undefined) faded.set(colour, (style = withAlpha(colour, FADED_ALPHA)));
  return style;
}

/** ``#rrggbb`` as ``rgba(r, g, b, alpha)``: the fill globalAlpha would give, as one style. */
export function withAlpha(hex: string, alpha: number): string {
  const value = Number.parseInt(hex.slice(1), 16);
  return `rgba(${value >> 16}, ${(value >> 8) & 255}, ${value & 255}, ${alpha})`;
}
