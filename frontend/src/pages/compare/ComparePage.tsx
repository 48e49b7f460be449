import { useState } from "react";
import { useSearchParams } from "react-router";
import { type Comparison, type DiffSection, useComparison } from "../../api/cluster";
import { useJobs } from "../../api/jobs";
import { EmptyState, ErrorAlert, Loading } from "../../components/Feedback";
import { Panel } from "../../components/Panel";
import { formatCount, formatDuration } from "../../lib/format";
import { metricLabel, readPair, signedDuration } from "./compareView";
import "./compare.css";

export function ComparePage() {
  const [params, setParams] = useSearchParams();
  const { a, b } = readPair(params);
  const jobs = useJobs({ ordering: "-created_at" });
  const comparison = useComparison(a, b);
  const choose = (side: "a" | "b", value: string) => {
    const next = new URLSearchParams(params);
    if (value) next.set(side, value);
    else next.delete(side);
    setParams(next, { replace: true });
  };
  const picker = (side: "a" | "b", label: string, value: number | null) => (
    <label>
      {label}{" "}
      <select value={value ?? ""} onChange={(e) => choose(side, e.target.value)} aria-label={label}>
        <option value="">Choose a job</option>
        {jobs.data?.results.map((job) => <option key={job.id} value={job.id}>{job.name}</option>)}
        {value !== null && !jobs.data?.results.some((job) => job.id === value) && (
          <option value={value}>Job {value}</option>
        )}
      </select>
    </label>
  );
  return (
    <>
      <h1>Compare runs</h1>
      <div className="compare-pickers">
        {picker("a", "Baseline (A)", a)}
        {picker("b", "Compared run (B)", b)}
        <span className="muted">The address of this page links to this comparison.</span>
      </div>
      {(a === null || b === null) && (
        <EmptyState title="Pick two jobs">
          <p>Choose a baseline and the run to compare with it: every kernel, annotation, step time and
            headline number of B is set against A.</p>
        </EmptyState>
      )}
      {comparison.isError && <ErrorAlert error={comparison.error} />}
      {comparison.isFetching && !comparison.data && <Loading what="the comparison" />}
      {comparison.data && <ComparisonPanels data={comparison.data} />}
    </>
  );
}

function ComparisonPanels({ data }: { data: Comparison }) {
  const { a, b } = data.steps;
  const stepRows = [
    ["Steps", formatCount(a.count), formatCount(b.count), null],
    ...(["p50_ns", "p95_ns", "min_ns", "max_ns"] as const).map((key) => [
      `Step time ${key.replace("_ns", "")}`, a[key] === null ? "—" : formatDuration(a[key]!),
      b[key] === null ? "—" : formatDuration(b[key]!),
      a[key] !== null && b[key] !== null ? signedDuration(b[key]! - a[key]!) : null,
    ]),
  ];
  return (
    <div className="panel-grid compare-grid">
      <Panel title={`${data.a.name} → ${data.b.name}`} size="wide"
        note={`A: ${data.a.window.label}; B: ${data.b.window.label}.${
          data.a.window.window === data.b.window.window ? "" : " The two jobs show different windows: switch one on its Dashboard to compare like with like."
        }`}>
        <table className="table compare-table" aria-label="Metrics side by side">
          <thead><tr><th>Metric</th><th>A: {data.a.name}</th><th>B: {data.b.name}</th><th>B − A</th></tr></thead>
          <tbody>
            {data.metrics.map((m) => {
              const isTime = m.metric.endsWith("_ns");
              const show = (v: number | null | undefined) =>
                v === null || v === undefined ? "—" : isTime ? formatDuration(v) : formatCount(v);
              const delta = m.a !== null && m.a !== undefined && m.b !== null && m.b !== undefined ? m.b - m.a : null;
              return (
                <tr key={m.metric}>
                  <td>{metricLabel(m.metric)}</td><td>{show(m.a)}</td><td>{show(m.b)}</td>
                  <td>{delta === null ? "—" : isTime ? signedDuration(delta) : formatCount(delta)}</td>
                </tr>
              );
            })}
            {stepRows.map(([label, x, y, delta]) => (
              <tr key={`step-${label}`}><td>{label}</td><td>{x}</td><td>{y}</td><td>{delta ?? "—"}</td></tr>
            ))}
          </tbody>
        </table>
      </Panel>
      <DiffPanel title="Kernels" section={data.kernels} />
      <DiffPanel title="Annotations" section={data.annotations} />
      <Panel title="Per rank" size="wide"
        emptyReason={data.ranks.length ? null : "the two jobs have no ranks with steps in common"}>
        <table className="table compare-table" aria-label="Per rank">
          <thead><tr><th>Rank</th><th>Step A</th><th>Step B</th><th>Gap A</th><th>Gap B</th>
            <th>Fwd + bwd A</th><th>Fwd + bwd B</th><th>Tail A</th><th>Tail B</th></tr></thead>
          <tbody>
            {data.ranks.map((r) => (
              <tr key={r.rank}>
                <td>{r.rank}</td><td>{formatDuration(r.a_dur_ns)}</td><td>{formatDuration(r.b_dur_ns)}</td>
                <td>{formatDuration(r.a_gap_ns)}</td><td>{formatDuration(r.b_gap_ns)}</td>
                <td>{formatDuration(r.a_compute_ns)}</td><td>{formatDuration(r.b_compute_ns)}</td>
                <td>{formatDuration(r.a_tail_ns)}</td><td>{formatDuration(r.b_tail_ns)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Panel>
    </div>
  );
}

const FIRST_ROWS = 25;

function DiffPanel({ title, section }: { title: string; section: DiffSection }) {
  const [showAll, setShowAll] = useState(false);
  const rows = showAll ? section.rows : section.rows.slice(0, FIRST_ROWS);
  return (
    <Panel title={title} size="wide" emptyReason={section.rows.length ? null : `no ${title.toLowerCase()} differ`}
      note={<>{formatCount(section.added)} added, {formatCount(section.removed)} removed,{" "}
        {formatCount(section.changed)} changed in time; total change {signedDuration(section.total_delta_ns)}.
        Sorted by the size of the time change.</>}>
      <div className="table-wrap">
        <table className="table compare-table" aria-label={`${title} diff`}>
          <thead><tr><th>Name</th><th>Change</th><th>Calls A</th><th>Calls B</th><th>Time A</th><th>Time B</th>
            <th>B − A</th></tr></thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.name}>
                <td className="diff-name" title={row.name}>{row.name}</td>
                <td>{row.status}</td>
                <td>{formatCount(row.count_a)}</td><td>{formatCount(row.count_b)}</td>
                <td>{formatDuration(row.total_ns_a)}</td><td>{formatDuration(row.total_ns_b)}</td>
                <td className={row.delta_ns > 0 ? "delta-up" : row.delta_ns < 0 ? "delta-down" : undefined}>
                  {signedDuration(row.delta_ns)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {section.rows.length > FIRST_ROWS && (
        <button type="button" className="btn btn-small" onClick={() => setShowAll(!showAll)}>
          {showAll ? `Show the first ${FIRST_ROWS}` : `Show all ${formatCount(section.rows.length)} rows`}
        </button>
      )}
    </Panel>
  );
}
