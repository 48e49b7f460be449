import {
  type CaptureWindow,
  type CaptureWindowKind,
  type JobCapture,
  type ProcessCapture,
  useJobCapture,
} from "../../api/capture";
import { type DataColumn, Table } from "../../components/DataTable";
import { formatCount, plural } from "../../lib/format";

const KIND_WORDS: Record<CaptureWindowKind, string> = {
  gpu: "GPU only",
  full: "GPU and CPU operators",
  cpu: "CPU operators (no GPU)",
};
/** How the steps line counts the windows of each kind: "3 GPU-only, 1 full". */
const KIND_COUNTS: [CaptureWindowKind, string][] = [
  ["gpu", "GPU-only"],
  ["full", "full"],
  ["cpu", "CPU-only"],
];
const MS_FORMAT = new Intl.NumberFormat("en-US", {
  minimumFractionDigits: 1,
  maximumFractionDigits: 1,
});
/** Processes named in the warning before "and N more". */
const NAMED_OVER_BUDGET = 3;

type WindowRow = CaptureWindow & { process: string };

/** What the collector cost the training and which steps Kineto captured. */
export function CaptureCard({ jobId }: { jobId: number }) {
  const capture = useJobCapture(jobId);
  const data = capture.data;
  return (
    <section className="card" aria-labelledby="info-capture">
      <h3 id="info-capture">Profiler cost and coverage</h3>
      {/* Secondary to the job's own facts: a failed read is said here, not raised as an alert. */}
      {capture.isError && (
        <p className="muted">
          The collector's report could not be read:{" "}
          {capture.error instanceof Error ? capture.error.message : String(capture.error)}
        </p>
      )}
      {capture.isPending && <p className="muted">Reading the collector's report…</p>}
      {data && !data.reported && <NotReported capture={data} />}
      {data?.reported && <Reported capture={data} />}
    </section>
  );
}

function NotReported({ capture }: { capture: JobCapture }) {
  return (
    <>
      <p className="muted">
        This job's collector did not report its cost (an older collector or an imported trace).
      </p>
      {capture.captured_steps && (
        <dl className="facts">
          <dt>Captured steps</dt>
          <dd>{capture.captured_steps}</dd>
        </dl>
      )}
    </>
  );
}

function Reported({ capture }: { capture: JobCapture }) {
  const over = capture.processes.filter((process) => process.exceeded);
  const windows: WindowRow[] = capture.processes.flatMap((process) =>
    process.windows.map((window) => ({ ...window, process: processName(process) })),
  );
  const cut = capture.processes.filter((process) => process.windows_count > process.windows.length);
  return (
    <>
      {over.length > 0 && (
        <p className="alert alert-warning" role="alert">
          The collector went over its budget: {overBudget(over)}.
        </p>
      )}
      <dl className="facts">
        <dt>Budget</dt>
        <dd>
          {capture.budget_pct === null
            ? "differs between processes"
            : `${pct(capture.budget_pct)} of wall time`}
        </dd>
        <dt>Overhead</dt>
        <dd>{overheadWords(capture)}</dd>
        <dt>Schedule</dt>
        <dd>{scheduleWords(capture.schedule)}</dd>
        <dt>Steps captured</dt>
        <dd>{stepsCaptured(capture)}</dd>
        {capture.captured_steps && (
          <>
            <dt>Captured steps</dt>
            <dd>{capture.captured_steps}</dd>
          </>
        )}
        {capture.processes.length > 1 && (
          <>
            <dt>Steps per process, summed</dt>
            <dd>{processSums(capture)}</dd>
          </>
        )}
      </dl>
      {windows.length > 0 && (
        <Table
          label="Profiler windows"
          rows={windows}
          columns={WINDOW_COLUMNS}
          unsorted={cut.length > 0}
        />
      )}
      {cut.map((process) => (
        <p className="muted" key={processName(process)}>
          {processName(process)}: the last {formatCount(process.windows.length)} of its{" "}
          {formatCount(process.windows_count)} windows.
        </p>
      ))}
    </>
  );
}

const WINDOW_COLUMNS: DataColumn<WindowRow>[] = [
  { key: "process", label: "Process" },
  {
    key: "steps",
    label: "Steps",
    value: (window) => window.first_step,
    cell: (window) => stepRange(window),
  },
  { key: "kind", label: "Recorded", value: (window) => KIND_WORDS[window.kind] },
  {
    key: "cost_ns",
    label: "Cost",
    csv: "cost_ns",
    className: "nowrap",
    format: (ns) => `${MS_FORMAT.format(ns / 1e6)} ms`,
  },
];

/** "0.47 % measured: Kineto windows 0.42 %, the collector's threads and packing 0.05 %". */
function overheadWords(capture: JobCapture): string {
  const { overhead_pct, cost_ns, background_ns, elapsed_ns } = capture;
  if (overhead_pct === null) return "—";
  const measured = `${pct(overhead_pct)} measured`;
  if (!cost_ns || !elapsed_ns || background_ns === null) return measured;
  const windows = (100 * (cost_ns - background_ns)) / elapsed_ns;
  const background = (100 * background_ns) / elapsed_ns;
  return `${measured}: Kineto windows ${pct(windows)}, the collector's threads and packing ${pct(background)}`;
}

/** A percentage without trailing zeros: "1 %", "0.42 %", "1.7 %" (one decimal). */
function pct(value: number, decimals = 2): string {
  return `${Number(value.toFixed(decimals))} %`;
}

function processName(process: ProcessCapture): string {
  const pid = process.pid === null ? "" : `, pid ${process.pid}`;
  return `${process.node} rank ${process.rank}${pid}`;
}

function stepRange(window: CaptureWindow): string {
  return window.first_step === window.last_step
    ? `${window.first_step}`
    : `${window.first_step}–${window.last_step}`;
}

function scheduleWords(schedule: JobCapture["schedule"]): string {
  if (schedule === "budget") return "spaced by the budget";
  if (schedule === "fixed") return "your fixed schedule";
  return "differs between processes";
}

/**
 * "20 of 1,200 steps (1.7 %) in 4 windows: 3 GPU-only, 1 full": the job's training steps, each
 * counted once however many processes ran it (the denominator of the captured steps' label too);
 * the windows are every process's, so several processes say so ("in 8 windows over 2 processes").
 */
function stepsCaptured(capture: JobCapture): string {
  const { distinct_steps_run: run, distinct_steps_captured: captured } = capture;
  if (run === null || captured === null) return "—";
  const total = capture.windows_total ?? 0;
  const processes = capture.processes.length;
  const over = processes > 1 ? ` over ${plural(processes, "process", "processes")}` : "";
  const kinds = KIND_COUNTS.filter(([kind]) => (capture.windows_by_kind?.[kind] ?? 0) > 0).map(
    ([kind, words]) => `${formatCount(capture.windows_by_kind![kind])} ${words}`,
  );
  const byKind = kinds.length ? `: ${kinds.join(", ")}` : "";
  return `${stepsOf(captured, run)} in ${plural(total, "window")}${over}${byKind}`;
}

/** "12 of 30 steps (40 %), summed over 2 processes": each process's own count added up. */
function processSums(capture: JobCapture): string {
  const { steps_run: run, steps_captured: captured, processes } = capture;
  if (run === null || captured === null) return "—";
  return `${stepsOf(captured, run)}, summed over ${plural(processes.length, "process", "processes")}`;
}

/** "6 of 20 steps (30 %)" */
function stepsOf(captured: number, run: number): string {
  const share = run ? ` (${pct((100 * captured) / run, 1)})` : "";
  return `${formatCount(captured)} of ${plural(run, "step")}${share}`;
}

/** "algo-1 rank 0, pid 100 measured 1.5 % against 1 %", three at most and how many more. */
function overBudget(over: ProcessCapture[]): string {
  const named = over
    .slice(0, NAMED_OVER_BUDGET)
    .map(
      (process) =>
        `${processName(process)} measured ${pct(process.overhead_pct)} against ${pct(process.budget_pct)}`,
    );
  const more = over.length - named.length;
  return named.join("; ") + (more > 0 ? `; and ${plural(more, "process", "processes")} more` : "");
}
