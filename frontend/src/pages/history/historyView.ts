import type { SeriesRun } from "../../api/history";
import type { LineSeries } from "../../charts/options";
import { colourFor } from "../../lib/colour";

export { VERDICT_LABELS, verdictLabel } from "../../api/history";

/** Which series the page shows: its id from the address, or null. */
export function readSeries(params: URLSearchParams): number | null {
  const id = Number(params.get("series"));
  return Number.isInteger(id) && id > 0 ? id : null;
}

export function runCount(n: number): string {
  return `${n} ${n === 1 ? "run" : "runs"}`;
}

/** `name` cut around the first occurrence of `search` in any case (as the server matches), so
 * the picker can mark what matched: [before, match, after]; no match: [name, "", ""]. */
export function splitMatch(name: string, search: string): [string, string, string] {
  const at = search ? name.toLowerCase().indexOf(search.toLowerCase()) : -1;
  if (at < 0) return [name, "", ""];
  const end = at + search.length;
  return [name.slice(0, at), name.slice(at, end), name.slice(end)];
}

/** The option `step` places from `current` in a list of `count` (arrow keys): the first when
 * none is active; it stays within the list. */
export function stepOption(current: number, step: 1 | -1, count: number): number {
  if (count === 0) return -1;
  if (current < 0) return step > 0 ? 0 : count - 1;
  return Math.min(count - 1, Math.max(0, current + step));
}

/** Runs are plotted at their position in the series (1, 2, …): runs days apart and runs
 * minutes apart are equally readable, and the axis names each by its job. */
function points(runs: readonly SeriesRun[], value: (run: SeriesRun) => number | null | undefined) {
  const found: [number, number][] = [];
  runs.forEach((run, i) => {
    const y = value(run);
    if (y !== null && y !== undefined) found.push([i + 1, y]);
  });
  return found;
}

const NS_PER_MS = 1e6;

/** Each run's step time (the median of its captured steps) and their p95, in milliseconds. */
export function stepLines(runs: readonly SeriesRun[]): LineSeries[] {
  return [
    {
      name: "Step time (median of captured steps)",
      color: colourFor("step median"),
      points: points(runs, (r) => ms(r.figures?.step_p50_ns)),
    },
    {
      name: "p95 of captured steps",
      color: colourFor("step p95"),
      points: points(runs, (r) => ms(r.figures?.step_p95_ns)),
    },
  ];
}

export function utilisationLines(runs: readonly SeriesRun[]): LineSeries[] {
  return [
    {
      name: "GPU utilisation",
      color: colourFor("GPU"),
      points: points(runs, (r) => r.figures?.gpu_util_pct),
    },
  ];
}

const KERNEL_TYPES: [string, string][] = [
  ["COMP", "Computation"],
  ["COMM", "Communication"],
  ["OTHER", "Other kernels"],
];

/** Kernel time per step per rank of each type, in milliseconds. */
export function kernelTypeLines(runs: readonly SeriesRun[]): LineSeries[] {
  return KERNEL_TYPES.map(([type, label]) => ({
    name: label,
    color: colourFor(type),
    points: points(runs, (r) => ms(r.figures?.kernel_ns_per_step[type])),
  }));
}

function ms(ns: number | null | undefined): number | null {
  return ns === null || ns === undefined ? null : ns / NS_PER_MS;
}

/** The run's name at an axis position (1-based), for the charts' axis and tooltips. */
/** The run drawn at x = ``position`` (runs are drawn at 1, 2, …, oldest first). */
export function runAt(runs: readonly SeriesRun[], position: number): SeriesRun | null {
  return Number.isInteger(position) ? (runs[position - 1] ?? null) : null;
}

export function runLabel(runs: readonly SeriesRun[], position: number): string {
  const run = runAt(runs, position);
  return run ? `#${position} ${run.job_name}` : "";
}

/** The run a reader most likely wants to see: the latest one judged, else the latest. */
export function latestJudged(runs: readonly SeriesRun[]): SeriesRun | null {
  for (let i = runs.length - 1; i >= 0; i--) {
    const status = runs[i]!.verdict_status;
    if (status === "regression" || status === "no_regression") return runs[i]!;
  }
  return runs.at(-1) ?? null;
}
