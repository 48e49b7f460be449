/**
 * The one name → colour rule of the app: the timeline, the flame graph and every chart colour
 * a kernel, operator, node or category by its name through `colourFor`, so a name looks the
 * same wherever it is drawn and at every zoom.
 */

/** Tableau's ten colours (without its grey) then their light tints; grey is kept for "Other". */
export const PALETTE = [
  "#4e79a7",
  "#f28e2b",
  "#e15759",
  "#76b7b2",
  "#59a14f",
  "#edc948",
  "#b07aa1",
  "#ff9da7",
  "#9c755f",
  "#499894",
  "#a0cbe8",
  "#ffbe7d",
  "#ff9d9a",
  "#86bcb6",
  "#8cd17d",
  "#f1ce63",
  "#d4a6c8",
  "#fabfd2",
  "#d7b5a6",
  "#d37295",
  "#b6992d",
];
/** What is left over ("Other", idle time). */
export const OTHER_COLOUR = "#c3c8d0";
/** Active time, beside idle time in OTHER_COLOUR. */
export const ACTIVE_COLOUR = "#59a14f";

/** FNV-1a: cheap, and spreads names that differ in one character. */
function hash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** The colour of a name, the same in the timeline, the flame graph and the charts. */
export function colourFor(name: string): string {
  return PALETTE[hash(name) % PALETTE.length]!;
}
