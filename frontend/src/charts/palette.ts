/**
 * Tableau's ten colours (without its grey) then their light tints: distinct neighbours for the
 * fifteen slices a pie shows by default. Grey is kept for "Other".
 */
export const PALETTE = [
  "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
  "#9c755f", "#499894", "#a0cbe8", "#ffbe7d", "#ff9d9a", "#86bcb6", "#8cd17d", "#f1ce63",
  "#d4a6c8", "#fabfd2", "#d7b5a6", "#d37295", "#b6992d",
];
export const OTHER_COLOR = "#c3c8d0";
/** Active time in green; idle time is "Other" grey. */
export const ACTIVE_COLOR = "#59a14f";

export function paletteColor(index: number): string {
  return PALETTE[index % PALETTE.length]!;
}
