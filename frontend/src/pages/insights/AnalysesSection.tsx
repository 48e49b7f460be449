import { useMemo, useState } from "react";
import type { Analyses } from "../../api/insights";
import { Chart } from "../../charts/Chart";
import { PieChart } from "../../charts/PieChart";
import { lineOption } from "../../charts/options";
import { type DataColumn, DataTable } from "../../components/DataTable";
import { WindowNote } from "../../components/JobWindow";
import { formatBytes, formatDuration } from "../../lib/format";
import type { LineSeries } from "../../charts/options";
import {
  RANK,
  bandwidthLines,
  kernelNameColumn,
  num,
  queueLines,
  relativeToFirstPoint,
  temporalSlices,
  withRank,
} from "./analysesView";

/** The trace analyses: where GPU time goes, why it idles, launches and the busiest operators. */
export function AnalysesSection({
  analyses,
  framework,
}: {
  analyses: Analyses;
  /** The job's framework: a TensorFlow or JAX job has no PyTorch operators. */
  framework: string;
}) {
  if (analyses.temporal.length === 0 && analyses.operators.length === 0) {
    return <p className="muted">No trace analyses: this profile has no parsed trace events yet.</p>;
  }
  return (
    <div className="insights-analyses">
      <section className="card">
        <div className="window-heading">
          <h3>Temporal breakdown (GPU time per rank)</h3>
          <WindowNote />
        </div>
        <div className="analyses-pies">
          {analyses.temporal.slice(0, 4).map((row) => (
            <div key={num(row, "rank")}>
              <h4>Rank {num(row, "rank")}</h4>
              <PieChart
                slices={temporalSlices(row)}
                label={`Rank ${num(row, "rank")} temporal breakdown`}
                height={180}
              />
            </div>
          ))}
        </div>
      </section>
      <TimeSeries
        title="GPU queue length over time"
        label="Queue length per stream"
        series={queueLines(analyses.queue_length.slice(0, 8))}
        formatY={(y) => y.toFixed(0)}
      />
      <DataTable
        title="Queue length per stream"
        rows={analyses.queue_length_summary}
        columns={QUEUE_COLUMNS}
        fileName="queue-length"
      />
      <TimeSeries
        title="Memory copy bandwidth over time (GB/s)"
        label="Memory copy bandwidth per rank and kind"
        series={bandwidthLines(analyses.memory_bandwidth.slice(0, 8))}
        formatY={(y) => y.toFixed(1)}
      />
      <DataTable
        title="Memory copy bandwidth while copies run (GB/s)"
        rows={analyses.memory_bandwidth_summary}
        columns={BANDWIDTH_COLUMNS}
        fileName="memory-bandwidth"
      />
      <DataTable
        title="Kernel types"
        rows={analyses.kernel_types}
        columns={KERNEL_TYPE_COLUMNS}
        fileName="kernel-types"
      />
      <DataTable
        title="Communication–computation overlap"
        rows={analyses.overlap}
        columns={OVERLAP_COLUMNS}
        fileName="overlap"
      />
      <DataTable
        title="Idle time by cause"
        rows={analyses.idle}
        columns={IDLE_COLUMNS}
        fileName="idle-time"
      />
      <DataTable
        title="Kernel launches"
        rows={analyses.launch_findings}
        columns={LAUNCH_COLUMNS}
        fileName="kernel-launches"
      />
      <DataTable
        title={'Top kernels per rank and type (the rest of each type as "others", as in HTA)'}
        rows={analyses.top_kernels ?? []}
        columns={TOP_KERNEL_COLUMNS}
        fileName="top-kernels"
      />
      <KernelTable analyses={analyses} />
      <OperatorTable analyses={analyses} framework={framework} />
    </div>
  );
}

/** Every GPU kernel, memcpy and memset per rank, like HTA's kernel statistics. */
function KernelTable({ analyses }: { analyses: Analyses }) {
  const rows = analyses.kernels;
  const columns = useMemo(() => withRank(rows, KERNEL_COLUMNS), [rows]);
  return (
    <DataTable
      title="GPU kernels"
      rows={rows}
      columns={columns}
      total={analyses.kernels_total}
      filterKey="name"
      defaultSort={{ key: "sum_ns", desc: true }}
      fileName="kernels"
      wide
    />
  );
}

/** Frameworks whose profiles (XPlane) record their runtime's and XLA's ops, not PyTorch's. */
const XPLANE_FRAMEWORKS = new Set(["JAX", "TensorFlow"]);

/** Every operator, like key_averages(); split by input shapes when the trace recorded them. */
function OperatorTable({ analyses, framework }: { analyses: Analyses; framework: string }) {
  const [byShape, setByShape] = useState(false);
  const grouped = byShape && analyses.input_shapes_recorded;
  const rows = grouped ? analyses.operators_by_shape : analyses.operators;
  const total = grouped ? analyses.operators_by_shape_total : analyses.operators_total;
  const columns = useMemo(() => {
    const shown = OPERATOR_COLUMNS.filter(({ key }) =>
      key === "input_dims"
        ? grouped
        : !key.endsWith("memory_bytes") || rows.some((row) => row[key] != null),
    );
    return withRank(rows, shown);
  }, [rows, grouped]);
  const toggle = XPLANE_FRAMEWORKS.has(framework) ? (
    <p className="muted">
      A {framework} profile has no PyTorch operators: these are its runtime's host events and its
      ops ({framework === "JAX" ? "XLA's ops on a CPU-only run" : "TensorFlow's ops"}), without
      input shapes.
    </p>
  ) : analyses.input_shapes_recorded ? (
    <label className="checkbox-field">
      <input
        type="checkbox"
        checked={byShape}
        onChange={(event) => setByShape(event.target.checked)}
      />
      Group by input shape
    </label>
  ) : (
    <p className="muted">
      Input shapes were not recorded (profile with record_shapes=True to group by them).
    </p>
  );
  return (
    <DataTable
      title="Operators"
      rows={rows}
      columns={columns}
      total={total}
      filterKey="name"
      defaultSort={{ key: "self_ns", desc: true }}
      fileName={grouped ? "operators-by-input-shape" : "operators"}
      wide
    >
      {toggle}
    </DataTable>
  );
}

function TimeSeries({
  title,
  label,
  series,
  formatY,
}: {
  title: string;
  label: string;
  series: LineSeries[];
  formatY: (y: number) => string;
}) {
  const option = useMemo(() => {
    return lineOption(relativeToFirstPoint(series), {
      xName: "seconds",
      formatX: (x) => x.toFixed(2),
      formatY,
      sampled: true,
    });
  }, [series, formatY]);
  if (series.length === 0) return null;
  return (
    <section className="card">
      <div className="window-heading">
        <h3>{title}</h3>
        <WindowNote />
      </div>
      <Chart option={option} height={220} label={label} />
    </section>
  );
}

const fixed1 = (value: number) => value.toFixed(1);
const pct = (value: number) => `${value.toFixed(1)}%`;
const ratio = (value: number) => value.toFixed(3);
const bytes = (value: number) => (value < 0 ? `−${formatBytes(-value)}` : formatBytes(value));

const QUEUE_COLUMNS: DataColumn[] = [
  RANK,
  { key: "stream", label: "Stream" },
  { key: "mean", label: "Mean", format: fixed1 },
  { key: "p50", label: "Median", format: fixed1 },
  { key: "max", label: "Max" },
  { key: "full_queue_ns", label: "Time at full queue", format: formatDuration },
];
const BANDWIDTH_COLUMNS: DataColumn[] = [
  RANK,
  { key: "kind", label: "Kind" },
  { key: "count", label: "Points" },
  { key: "mean", label: "Mean", format: fixed1, csv: "mean_gbps" },
  { key: "p50", label: "Median", format: fixed1, csv: "p50_gbps" },
  { key: "max", label: "Max", format: fixed1, csv: "max_gbps" },
];
const KERNEL_TYPE_COLUMNS: DataColumn[] = [
  RANK,
  { key: "kernel_type", label: "Type" },
  { key: "time_ns", label: "Time", format: formatDuration },
  { key: "pct", label: "Share %", format: pct, csv: "share_pct" },
];
const OVERLAP_COLUMNS: DataColumn[] = [
  RANK,
  { key: "comm_ns", label: "Communication", format: formatDuration },
  { key: "overlap_pct", label: "Overlapped %", format: pct },
];
const IDLE_COLUMNS: DataColumn[] = [
  RANK,
  { key: "stream", label: "Stream" },
  { key: "category", label: "Cause" },
  { key: "idle_ns", label: "Idle", format: formatDuration },
  { key: "idle_ratio", label: "Ratio", format: ratio },
];
// Launches and their findings count what Holistic Trace Analysis calls a launch; the wider
// count beside them is every host call that enqueued GPU work.
const LAUNCH_COLUMNS: DataColumn[] = [
  RANK,
  {
    key: "launches",
    label: "Launches (HTA)",
    cellTitle: () =>
      "Kernel launches, async copies and sets (cudaLaunchKernel, cudaLaunchKernelExC, " +
      "cudaMemcpyAsync, cudaMemsetAsync, MTIA's runFunction), as Holistic Trace Analysis counts them",
  },
  { key: "short_kernels", label: "Short kernels" },
  { key: "runtime_outliers", label: "Runtime outliers" },
  { key: "delay_outliers", label: "Launch-delay outliers" },
  {
    key: "all_launches",
    label: "All enqueue calls",
    cellTitle: () =>
      "Every host call that enqueued GPU work, with CUDA graph launches, the driver API " +
      "(cuLaunchKernel), ROCm and other accelerators' runtimes",
  },
];
const KERNEL_COLUMNS: DataColumn[] = [
  kernelNameColumn("Kernel"),
  { key: "type", label: "Type" },
  { key: "count", label: "Count" },
  { key: "sum_ns", label: "Total", format: formatDuration },
  { key: "mean_ns", label: "Mean", format: formatDuration },
  { key: "min_ns", label: "Min", format: formatDuration },
  { key: "max_ns", label: "Max", format: formatDuration },
  { key: "std_ns", label: "Std dev", format: formatDuration },
  { key: "share_of_type_pct", label: "% of type", format: pct },
];
const TOP_KERNEL_COLUMNS: DataColumn[] = [
  RANK,
  { key: "type", label: "Type" },
  kernelNameColumn("Kernel"),
  { key: "kernels", label: "Kernels" },
  { key: "count", label: "Runs" },
  { key: "sum_ns", label: "Total", format: formatDuration },
  { key: "share_of_type_pct", label: "% of type", format: pct },
  { key: "mean_ns", label: "Mean", format: formatDuration },
  { key: "max_ns", label: "Max", format: formatDuration },
];
const OPERATOR_COLUMNS: DataColumn[] = [
  { key: "name", label: "Operator", code: true },
  { key: "input_dims", label: "Input shapes", wrap: true },
  { key: "count", label: "Calls" },
  { key: "self_ns", label: "Self CPU", format: formatDuration },
  { key: "total_ns", label: "Total CPU", format: formatDuration },
  { key: "avg_self_ns", label: "Avg self CPU", format: formatDuration },
  { key: "self_pct", label: "Self %", format: pct },
  { key: "cpu_memory_bytes", label: "CPU memory", format: bytes },
  { key: "self_cpu_memory_bytes", label: "Self CPU memory", format: bytes },
];
