import type { Dashboard } from "../../api/dashboard";

export const LONG_KERNEL =
  "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, " +
  "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)";

const kernels = [
  { name: LONG_KERNEL, total_ns: 26_303_973, count: 405 },
  { name: "volta_sgemm_64x64_nt", total_ns: 22_668_122, count: 30 },
  ...Array.from({ length: 18 }, (_, i) => ({
    name: `kernel_${String(i + 3).padStart(2, "0")}`,
    total_ns: 10_000_000 - i * 500_000,
    count: 100 - i,
  })),
];

/** A two-node job's dashboard document, shaped exactly as GET /api/jobs/{id}/dashboard/ answers. */
export function makeDashboard(overrides: Partial<Dashboard> = {}): Dashboard {
  return {
    job: 7,
    window: {
      window: "complete_steps",
      label: "complete steps #101–#105 (5 of 6)",
      steps_total: 6,
      steps_kept: 5,
      steps_dropped: 1,
      last_step_dropped: true,
      switch_note: null,
    },
    totals: {
      kernel_runs: 4350,
      kernel_ns: 250_000_000,
      gpu_op_runs: 6095,
      gpu_op_ns: 291_000_000,
      compute_ns: 240_000_000,
      comm_ns: 0,
      memory_ns: 41_000_000,
      other_ns: 10_000_000,
      sync_ns: 0,
    },
    partial: false,
    profile_ns: 578_888_534,
    over: {
      what: "profile span",
      ns: 578_888_534,
      steps: 5,
      label: "the profile's span (complete steps)",
    },
    step_time: { median_ns: 95_551_087, steps: 5, label: "median of 5 steps" },
    gpus: 1,
    gpu_active: { source: "kernel_busy", active_points: 812, idle_points: 188, empty_reason: null },
    cpu_active: {
      source: null,
      active_points: 0,
      idle_points: 0,
      empty_reason: "no CPU samples in an imported trace",
    },
    gpu_utilization: {
      source: "kernel_busy",
      empty_reason: null,
      series: [
        {
          node: "algo-1",
          points: [
            [1_700_000_000_000_000_000, 0],
            [1_700_000_000_500_000_000, 62.5],
            [1_700_000_001_000_000_000, 100],
          ],
        },
        {
          node: "algo-2",
          points: [
            [1_700_000_000_250_000_000, 40],
            [1_700_000_000_750_000_000, 80],
          ],
        },
      ],
    },
    cpu_utilization: {
      source: null,
      empty_reason: "no CPU samples in an imported trace",
      series: [],
    },
    kernel_time: { total_ns: 250_000_000, total_count: 4350, empty_reason: null, top: kernels },
    kernel_count: {
      total_ns: 250_000_000,
      total_count: 4350,
      empty_reason: null,
      top: [...kernels].sort((a, b) => b.count - a.count),
    },
    steps: {
      empty_reason: null,
      durations_ns: [10, 12, 15, 21, 29].map((ms) => ms * 1_000_000),
      names: [
        "ProfilerStep#101",
        "ProfilerStep#102",
        "ProfilerStep#103",
        "ProfilerStep#104",
        "ProfilerStep#105",
      ],
    },
    precision: {
      empty_reason: null,
      rows: [
        { precision: "FP32", total_ns: 240_000_000, count: 4300 },
        { precision: "INT64", total_ns: 10_000_000, count: 50 },
      ],
    },
    gpu_activity: {
      empty_reason: null,
      rows: [
        { kind: "kernel", total_ns: 250_000_000, count: 4350 },
        { kind: "memcpy", total_ns: 40_000_000, count: 1600 },
        { kind: "memset", total_ns: 1_000_000, count: 145 },
        { kind: "sync", total_ns: 0, count: 0 },
      ],
    },
    memory_ops: {
      empty_reason: null,
      rows: [
        { kind: "Memcpy HtoD", total_ns: 30_000_000, count: 800, bytes: 300_000_000 },
        { kind: "Memcpy DtoH", total_ns: 10_000_000, count: 800, bytes: 3_200 },
        { kind: "Memset", total_ns: 1_000_000, count: 145, bytes: 0 },
      ],
    },
    annotation_names: ["## backward ##", "## forward ##", "## optimizer ##"],
    ...overrides,
  };
}
