import { useState } from "react";
import { useSearchParams } from "react-router";
import { type Comparison, type DiffSection, useComparison } from "../../api/cluster";
import { EmptyState, ErrorAlert, Loading } from "../../components/Feedback";
import { Panel } from "../../components/Panel";
import { formatCount, formatDuration } from "../../lib/format";
import {
  formatChange,
  formatFigure,
  metricLabel,
  readPair,
  readWindow,
  signedDuration,
  verdict,
} from "./compareView";
import { JobPicker } from "./JobPicker";
import "./compare.css";

export function ComparePage() {
  const [params, setParams] = useSearchParams();
  const { a, b } = readPair(params);
  const window = readWindow(params);
  const comparison = useComparison(a, b, window);
  const choose = (name: "a" | "b" | "window", value: string | null) => {
    const next = new URLSearchParams(params);
    if (value) next.set(name, value);
    else next.delete(name);
    setParams(next, { replace: true });
  };
  const shown = comparison.data?.a.window.window;
  return (
    <>
      <h1>Compare runs</h1>
      <div className="compare-pickers">
        <JobPicker
          label="Baseline (A)"
          value={a}
          onChange={(id) => choose("a", id === null ? null : String(id))}
        />
        <JobPicker
          label="Compared run (B)"
          value={b}
          onChange={(id) => choose("b", id === null ? null : String(id))}
        />
        <label title="Both jobs are compared over the same window; left unchosen, it is the window you view job A in.">
          Window{" "}
          <select
            aria-label="Window of both jobs"
            value={window ?? shown ?? ""}
            onChange={(e) => choose("window", e.target.value)}
          >
            {!window && !shown && <option value="">Yours of job A</option>}
            <option value="whole_trace">Whole trace</option>
            <option value="complete_steps">Complete steps</option>
          </select>
        </label>
        <span className="muted">The address of this page links to this comparison.</span>
      </div>
      {(a === null || b === null) && (
        <EmptyState title="Pick two jobs">
          <p>
            Choose a baseline and the run to compare with it: every kernel, annotation, step time
            and headline number of B is set against A, per step and per rank.
          </p>
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
    ["Steps (summed over ranks)", formatCount(a.count), formatCount(b.count), null],
    ...(["p95_ns", "min_ns", "max_ns"] as const).map((key) => [
      `Step time ${key.replace("_ns", "")}`,
      a[key] === null ? "—" : formatDuration(a[key]!),
      b[key] === null ? "—" : formatDuration(b[key]!),
      a[key] !== null && b[key] !== null ? signedDuration(b[key]! - a[key]!) : null,
    ]),
  ];
  const per = (job: Comparison["a"]) =>
    `${job.name}: ${job.window.label}; ${formatCount(job.ranks)} rank${job.ranks === 1 ? "" : "s"}, ` +
    `totals divided by ${formatCount(job.rank_steps)} rank-step${job.rank_steps === 1 ? "" : "s"}`;
  return (
    <div className="panel-grid compare-grid">
      <Panel
        title={`${data.a.name} → ${data.b.name}`}
        size="wide"
        note={
          <>
            Both in one window. A: {per(data.a)}. B: {per(data.b)}. Green and red judge the figure
            per step and per rank only; raw totals grow with the ranks and steps.
          </>
        }
      >
        <table className="table compare-table" aria-label="Metrics side by side">
          <thead>
            <tr>
              <th>Metric</th>
              <th>A per step per rank</th>
              <th>B per step per rank</th>
              <th>Change per step per rank</th>
              <th>A total</th>
              <th>B total</th>
              <th>B − A total</th>
            </tr>
          </thead>
          <tbody>
            {data.metrics.map((m) => {
              const judged = verdict(m.better, m.norm_a, m.norm_b);
              const hasNorm = m.norm_a !== null && m.norm_b !== null;
              return (
                <tr key={m.metric} data-metric={m.metric}>
                  <td>{metricLabel(m.metric)}</td>
                  <td className="compare-norm">{formatFigure(m.metric, m.norm_a)}</td>
                  <td className="compare-norm">{formatFigure(m.metric, m.norm_b)}</td>
                  <td
                    className={
                      judged === "better"
                        ? "delta-down"
                        : judged === "worse"
                          ? "delta-up"
                          : undefined
                    }
                    title={judged ? `B is ${judged} per step per rank` : undefined}
                  >
                    {hasNorm ? formatChange(m.metric, m.norm_b! - m.norm_a!) : "—"}
                  </td>
                  <td>{formatFigure(m.metric, m.a)}</td>
                  <td>{formatFigure(m.metric, m.b)}</td>
                  <td>{m.a !== null && m.b !== null ? formatChange(m.metric, m.b - m.a) : "—"}</td>
                </tr>
              );
            })}
            {stepRows.map(([label, x, y, delta]) => (
              <tr key={`step-${label}`}>
                <td>{label}</td>
                <td colSpan={3} />
                <td>{x}</td>
                <td>{y}</td>
                <td>{delta ?? "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Panel>
      <DiffPanel title="Kernels" section={data.kernels} />
      <DiffPanel title="Annotations" section={data.annotations} />
      <Panel
        title="Per rank"
        size="wide"
        note="Each rank's mean step and its parts, in the comparison's window."
        emptyReason={data.ranks.length ? null : "the two jobs have no ranks with steps in common"}
      >
        <table className="table compare-table" aria-label="Per rank">
          <thead>
            <tr>
              <th>Rank</th>
              <th>Step A</th>
              <th>Step B</th>
              <th>Gap A</th>
              <th>Gap B</th>
              <th>Fwd + bwd A</th>
              <th>Fwd + bwd B</th>
              <th>Tail A</th>
              <th>Tail B</th>
            </tr>
          </thead>
          <tbody>
            {data.ranks.map((r) => (
              <tr key={r.rank}>
                <td>{r.rank}</td>
                <td>{formatDuration(r.a_dur_ns)}</td>
                <td>{formatDuration(r.b_dur_ns)}</td>
                <td>{formatDuration(r.a_gap_ns)}</td>
                <td>{formatDuration(r.b_gap_ns)}</td>
                <td>{formatDuration(r.a_compute_ns)}</td>
                <td>{formatDuration(r.b_compute_ns)}</td>
                <td>{formatDuration(r.a_tail_ns)}</td>
                <td>{formatDuration(r.b_tail_ns)}</td>
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
    <Panel
      title={title}
      size="wide"
      emptyReason={section.rows.length ? null : `no ${title.toLowerCase()} differ`}
      note={
        <>
          {formatCount(section.added)} added, {formatCount(section.removed)} removed,{" "}
          {formatCount(section.changed)} changed in time; total change per step per rank{" "}
          {signedDuration(section.norm_total_delta_ns)} (raw total{" "}
          {signedDuration(section.total_delta_ns)}). Sorted by the size of the change per step per
          rank.
        </>
      }
    >
      <div className="table-wrap">
        <table className="table compare-table" aria-label={`${title} diff`}>
          <thead>
            <tr>
              <th>Name</th>
              <th>Change</th>
              <th>Calls A</th>
              <th>Calls B</th>
              <th>Per step per rank A</th>
              <th>Per step per rank B</th>
              <th>Change per step per rank</th>
              <th>Time A</th>
              <th>Time B</th>
              <th>B − A</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.name}>
                <td className="diff-name" title={row.name}>
                  {row.name}
                </td>
                <td>{row.status}</td>
                <td>{formatCount(row.count_a)}</td>
                <td>{formatCount(row.count_b)}</td>
                <td className="compare-norm">{formatDuration(row.norm_ns_a)}</td>
                <td className="compare-norm">{formatDuration(row.norm_ns_b)}</td>
                <td
                  className={
                    row.norm_delta_ns > 0
                      ? "delta-up"
                      : row.norm_delta_ns < 0
                        ? "delta-down"
                        : undefined
                  }
                >
                  {signedDuration(row.norm_delta_ns)}
                </td>
                <td>{formatDuration(row.total_ns_a)}</td>
                <td>{formatDuration(row.total_ns_b)}</td>
                <td>{signedDuration(row.delta_ns)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {section.rows.length > FIRST_ROWS && (
        <button type="button" className="btn btn-small" onClick={() => setShowAll(!showAll)}>
          {showAll
            ? `Show the first ${FIRST_ROWS}`
            : `Show all ${formatCount(section.rows.length)} rows`}
        </button>
      )}
    </Panel>
  );
}
