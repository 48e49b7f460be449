/** Ranks as people read them: "rank 3", "ranks 1–127", "ranks 1, 3–5". */
export function rankRanges(ranges: number[][]): string {
  const parts = ranges.map(([first, last]) => (first === last ? `${first}` : `${first}–${last}`));
  const single = ranges.length === 1 && ranges[0]![0] === ranges[0]![1];
  return `${single ? "rank" : "ranks"} ${parts.join(", ")}`;
}

/** "1 of 128 ranks · ranks 1–127 missing", or null when no rank is known to be missing. */
export function missingRanksNote(summary: {
  ranks: number[];
  world_size: number | null;
  missing_ranks: number[][];
}): string | null {
  if (summary.world_size === null || summary.missing_ranks.length === 0) return null;
  return `${summary.ranks.length} of ${summary.world_size} ranks · ${rankRanges(summary.missing_ranks)} missing`;
}
