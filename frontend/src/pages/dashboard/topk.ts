/** Top-k slices with the remainder folded into "Other", computed from the server's top list. */

export const DEFAULT_K = 15;
export const MAX_K = 200;

export type Ranked<T> = { row: T; value: number };
export type TopK<T> = { slices: Ranked<T>[]; other: number };

/**
 * The first `k` rows (already sorted by the server) and what the whole has beyond them. `other`
 * comes from the total rather than the rows past k, because the server sends only its top 200.
 */
export function topKWithOther<T>(
  rows: readonly T[],
  value: (row: T) => number,
  total: number,
  k: number,
): TopK<T> {
  const slices = rows.slice(0, k).map((row) => ({ row, value: value(row) }));
  const shown = slices.reduce((sum, slice) => sum + slice.value, 0);
  return { slices, other: Math.max(0, total - shown) };
}

/** k from what the person typed: a whole number from 1 to `max`, or an explanation. */
export function parseK(text: string, max = MAX_K): { k: number } | { error: string } {
  const trimmed = text.trim();
  const k = Number(trimmed);
  if (trimmed === "" || !Number.isInteger(k) || k < 1 || k > max) {
    return { error: `k must be a whole number from 1 to ${max}.` };
  }
  return { k };
}
