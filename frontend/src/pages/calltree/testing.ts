import type { Frames } from "./flame";

/** The call tree the flame graph's layout and renderer tests share:
 *
 *     step ─┬─ forward (60) ─ conv (40)
 *           └─ backward (30)
 *     other root (10)
 */
export const frames: Frames = {
  parent: [-1, 0, 0, 1, -1],
  name: [0, 1, 2, 3, 4],
  total_ns: [90, 60, 30, 40, 10],
  self_ns: [0, 20, 30, 40, 10],
  count: [1, 1, 1, 1, 1],
};
export const names = ["step", "forward", "backward", "aten::conv", "other"];
