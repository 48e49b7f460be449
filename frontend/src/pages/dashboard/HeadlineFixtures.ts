import type { Headline } from "../../api/dashboard";

/** A headline over 16 captured steps (the H200 job's figures), as the server answers it. */
export const HEADLINE: Headline = {
  over: "captured steps 57–60, 177–180, 297–300, 417–420 (16 of 160)",
  steps: 16,
  step_total_ns: 845_119_485,
  step_time: { median_ns: 51_567_735, steps: 16, label: "median of 16 captured steps" },
  breakdown: [
    { part: "kernels", total_ns: 450_935_368, per_step_ns: 28_183_460, share_pct: 53.36 },
    { part: "copies", total_ns: 185_086_900, per_step_ns: 11_567_931, share_pct: 21.9 },
    { part: "sets", total_ns: 1_496_648, per_step_ns: 93_540, share_pct: 0.18 },
    { part: "sync_waits", total_ns: 1_357_810, per_step_ns: 84_863, share_pct: 0.16 },
    { part: "data_loading", total_ns: 0, per_step_ns: 0, share_pct: 0 },
    { part: "host_only", total_ns: 14_296_181, per_step_ns: 893_511, share_pct: 1.69 },
    { part: "idle", total_ns: 191_946_578, per_step_ns: 11_996_661, share_pct: 22.71 },
  ],
  kernel_busy_pct: 53.36,
  nvml_mean_pct: 49.64,
};
