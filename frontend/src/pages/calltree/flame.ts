/** The flame graph's geometry, from the tree alone (no DOM): frames as rectangles in [0, 1]
 * across, one row per depth, roots on top; zoomed on a frame, it fills the width and its
 * ancestors stay above it, full width. */

export type Frames = {
  parent: number[];
  name: number[];
  total_ns: number[];
  self_ns: number[];
  count: number[];
};

export type Rect = { frame: number; depth: number; x0: number; x1: number };

export function childrenOf(frames: Frames): number[][] {
  const children: number[][] = frames.parent.map(() => []);
  frames.parent.forEach((p, i) => {
    if (p >= 0) children[p]!.push(i);
  });
  for (const list of children) list.sort((a, b) => frames.total_ns[b]! - frames.total_ns[a]!);
  return children;
}

export function rootsOf(frames: Frames): number[] {
  return frames.parent
    .map((p, i) => (p < 0 ? i : -1))
    .filter((i) => i >= 0)
    .sort((a, b) => frames.total_ns[b]! - frames.total_ns[a]!);
}

export function ancestors(frames: Frames, frame: number): number[] {
  const out: number[] = [];
  for (let at = frames.parent[frame]!; at >= 0; at = frames.parent[at]!) out.unshift(at);
  return out;
}

/** Rectangles of every frame at least `minWidth` wide (a share of the width). */
export function layoutFlame(frames: Frames, zoom: number | null = null, minWidth = 0): Rect[] {
  const children = childrenOf(frames);
  const rects: Rect[] = [];
  let tops = rootsOf(frames);
  let depth = 0;
  if (zoom !== null) {
    for (const a of ancestors(frames, zoom)) rects.push({ frame: a, depth: depth++, x0: 0, x1: 1 });
    tops = [zoom];
  }
  const whole = tops.reduce((s, i) => s + frames.total_ns[i]!, 0) || 1;
  const place = (list: number[], x: number, d: number, scale: number) => {
    for (const i of list) {
      const w = frames.total_ns[i]! * scale;
      if (w < minWidth) {
        x += w;
        continue;
      }
      rects.push({ frame: i, depth: d, x0: x, x1: x + w });
      place(children[i]!, x, d + 1, scale);
      x += w;
    }
  };
  place(tops, 0, depth, 1 / whole);
  return rects;
}

/** The frames whose name contains `query` (any case). */
export function matching(frames: Frames, names: string[], query: string): Set<number> {
  const q = query.trim().toLowerCase();
  if (!q) return new Set();
  return new Set(
    frames.name.map((n, i) => (names[n]!.toLowerCase().includes(q) ? i : -1)).filter((i) => i >= 0),
  );
}

/** The frame's path of name ids from the top, as the occurrences API takes it. */
export function pathIds(frames: Frames, nameIds: number[], frame: number): number[] {
  return [...ancestors(frames, frame), frame].map((i) => nameIds[frames.name[i]!]!);
}
