import { type ReactNode, useMemo, useState } from "react";
import type { Analyses } from "../../api/insights";
import { Chart } from "../../charts/Chart";
import { PieChart } from "../../charts/PieChart";
import { lineOption } from "../../charts/options";
import { formatBytes } from "../../lib/format";
import { formatDuration } from "../dashboard/units";
import type { LineSeries } from "../../charts/options";
import { type Row, bandwidthLines, num, queueLines, relativeToFirstPoint, temporalSlices } from "./analysesView";

/** The trace analyses: where GPU time goes, why it idles, launches and the busiest operators. */
export function AnalysesSection({ analyses }: { analyses: Analyses }) {
  if (analyses.temporal.length === 0 && analyses.operators.length === 0) {
    return <p className="muted">No trace analyses: this profile has no parsed trace events yet.</p>;
  }
  return (
    <div className="insights-analyses">
      <section className="card">
        <h3>Temporal breakdown (GPU time per rank)</h3>
        <div className="analyses-pies">
          {analyses.temporal.slice(0, 4).map((row) => (
            <div key={num(row, "rank")}>
              <h4>Rank {num(row, "rank")}</h4>
              <PieChart slices={temporalSlices(row)} label={`Rank ${num(row, "rank")} temporal breakdown`} height={180} />
            </div>
          ))}
        </div>
      </section>
      <TimeSeries title="GPU queue length over time" label="Queue length per stream"
        series={queueLines(analyses.queue_length.slice(0, 8))} formatY={(y) => y.toFixed(0)} />
      <Table title="Queue length per stream" rows={analyses.queue_length_summary}
        columns={[["rank", "Rank"], ["stream", "Stream"], ["mean", "Mean", "fixed1"], ["p50", "Median", "fixed1"], ["max", "Max"], ["full_queue_ns", "Time at full queue", "ns"]]} />
      <TimeSeries title="Memory copy bandwidth over time (GB/s)" label="Memory copy bandwidth per rank and kind"
        series={bandwidthLines(analyses.memory_bandwidth.slice(0, 8))} formatY={(y) => y.toFixed(1)} />
      <Table title="Memory copy bandwidth while copies run (GB/s)" rows={analyses.memory_bandwidth_summary}
        columns={[["rank", "Rank"], ["kind", "Kind"], ["count", "Points"], ["mean", "Mean", "fixed1"], ["p50", "Median", "fixed1"], ["max", "Max", "fixed1"]]} />
      <Table title="Kernel types" rows={analyses.kernel_types}
        columns={[["rank", "Rank"], ["kernel_type", "Type"], ["time_ns", "Time", "ns"], ["pct", "Share %", "pct"]]} />
      <Table title="Communication–computation overlap" rows={analyses.overlap}
        columns={[["rank", "Rank"], ["comm_ns", "Communication", "ns"], ["overlap_pct", "Overlapped %", "pct"]]} />
      <Table title="Idle time by cause" rows={analyses.idle}
        columns={[["rank", "Rank"], ["stream", "Stream"], ["category", "Cause"], ["idle_ns", "Idle", "ns"], ["idle_ratio", "Ratio", "ratio"]]} />
      <Table title="Kernel launches" rows={analyses.launch_findings}
        columns={[["rank", "Rank"], ["launches", "Launches"], ["short_kernels", "Short kernels"], ["runtime_outliers", "Runtime outliers"], ["delay_outliers", "Launch-delay outliers"]]} />
      <Table title={`Top kernels per rank and type (of ${analyses.kernels_total}; the rest of each type as "others", as in HTA)`}
        rows={analyses.kernels} code wide
        columns={[["rank", "Rank"], ["type", "Type"], ["name", "Kernel"], ["count", "Count"], ["sum_ns", "Total", "ns"], ["share_of_type_pct", "Share of type %", "pct"], ["mean_ns", "Mean", "ns"], ["max_ns", "Max", "ns"]]} />
      <OperatorTable analyses={analyses} />
    </div>
  );
}

/** The busiest operators, like key_averages(); split by input shapes when the trace recorded them. */
function OperatorTable({ analyses }: { analyses: Analyses }) {
  const [byShape, setByShape] = useState(false);
  const grouped = byShape && analyses.input_shapes_recorded;
  const rows = (grouped ? analyses.operators_by_shape : analyses.operators).slice(0, 15);
  const total = grouped ? analyses.operators_by_shape_total : analyses.operators_total;
  const columns: Column[] = [["name", "Operator"]];
  if (grouped) columns.push(["input_dims", "Input shapes", "shape"]);
  columns.push(["count", "Calls"], ["self_ns", "Self CPU", "ns"], ["total_ns", "Total CPU", "ns"], ["self_pct", "Self %", "pct"]);
  if (rows.some((row) => row.cpu_memory_bytes != null)) columns.push(["cpu_memory_bytes", "CPU memory", "bytes"]);
  const toggle = analyses.input_shapes_recorded ? (
    <label className="checkbox-field">
      <input type="checkbox" checked={byShape} onChange={(event) => setByShape(event.target.checked)} />
      Group by input shape
    </label>
  ) : (
    <p className="muted">Input shapes were not recorded (profile with record_shapes=True to group by them).</p>
  );
  return (
    <Table title={`Operators by self CPU time (top ${rows.length} of ${total})`} rows={rows} code wide columns={columns}>
      {toggle}
    </Table>
  );
}

function TimeSeries({ title, label, series, formatY }: { title: string; label: string; series: LineSeries[]; formatY: (y: number) => string }) {
  const option = useMemo(
    () => lineOption(relativeToFirstPoint(series), { xName: "seconds", formatX: (x) => x.toFixed(2), formatY }),
    [series, formatY],
  );
  if (series.length === 0) return null;
  return (
    <section className="card">
      <h3>{title}</h3>
      <Chart option={option} height={220} label={label} />
    </section>
  );
}

type Column = [key: string, label: string, format?: "ns" | "pct" | "ratio" | "fixed1" | "bytes" | "shape"];

/** A card with a table; `wide` spans the whole row, for tables with long names. */
function Table({ title, rows, columns, code = false, wide = false, children }: {
  title: string; rows: Row[]; columns: Column[]; code?: boolean; wide?: boolean; children?: ReactNode;
}) {  // prettier-ignore
  if (rows.length === 0) return null;
  return (
    <section className={wide ? "card wide" : "card"}>
      <h3>{title}</h3>
      {children}
      <div className="table-wrap">
        <table className={`table${code ? " table-code" : ""}`} aria-label={title}>
          <thead>
            <tr>{columns.map(([key, label]) => <th key={key}>{label}</th>)}</tr>
          </thead>
          <tbody>
            {rows.map((row, index) => (
              <tr key={index}>
                {columns.map(([key, , format]) => (
                  <td key={key} className={format === "shape" ? "shape-cell" : undefined} title={String(row[key] ?? "")}>{cell(row[key], format)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function cell(value: unknown, format: Column[2]): string {
  if (value === null || value === undefined) return "–";
  if (typeof value !== "number") return String(value);
  if (format === "ns") return formatDuration(value);
  if (format === "pct") return `${value.toFixed(1)}%`;
  if (format === "ratio") return value.toFixed(3);
  if (format === "fixed1") return value.toFixed(1);
  if (format === "bytes") return value < 0 ? `−${formatBytes(-value)}` : formatBytes(value);
  return value.toLocaleString("en-US");
}
