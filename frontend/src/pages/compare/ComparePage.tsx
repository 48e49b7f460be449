import { useMemo, useState } from "react";
import { useSearchParams } from "react-router";
import { type Comparison, type DiffSection, useComparison } from "../../api/cluster";
import { type DataColumn, Table } from "../../components/DataTable";
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

/** One line of the side-by-side table, as text: a metric's figures or a step statistic's. */
type Line = {
  key: string;
  /** The metric's name in the API, for lines that are metrics. */
  metric?: string;
  label: string;
  normA: string;
  normB: string;
  change: string;
  judged: ReturnType<typeof verdict>;
  a: string;
  b: string;
  delta: string;
};

function metricLines(data: Comparison): Line[] {
  const { a, b } = data.steps;
  const metrics = data.metrics.map((m): Line => {
    const hasNorm = m.norm_a !== null && m.norm_b !== null;
    return {
      key: m.metric,
      metric: m.metric,
      label: metricLabel(m.metric),
      normA: formatFigure(m.metric, m.norm_a),
      normB: formatFigure(m.metric, m.norm_b),
      change: hasNorm ? formatChange(m.metric, m.norm_b! - m.norm_a!) : "—",
      judged: verdict(m.better, m.norm_a, m.norm_b),
      a: formatFigure(m.metric, m.a),
      b: formatFigure(m.metric, m.b),
      delta: m.a !== null && m.b !== null ? formatChange(m.metric, m.b - m.a) : "—",
    };
  });
  const step = (label: string, x: string, y: string, delta: string | null): Line => ({
    key: `step-${label}`,
    label,
    normA: "",
    normB: "",
    change: "",
    judged: null,
    a: x,
    b: y,
    delta: delta ?? "—",
  });
  return [
    ...metrics,
    step("Steps (summed over ranks)", formatCount(a.count), formatCount(b.count), null),
    ...(["p95_ns", "min_ns", "max_ns"] as const).map((key) =>
      step(
        `Step time ${key.replace("_ns", "")}`,
        a[key] === null ? "—" : formatDuration(a[key]!),
        b[key] === null ? "—" : formatDuration(b[key]!),
        a[key] !== null && b[key] !== null ? signedDuration(b[key]! - a[key]!) : null,
      ),
    ),
  ];
}

const LINE_COLUMNS: DataColumn<Line>[] = [
  { key: "label", label: "Metric" },
  { key: "normA", label: "A per step per rank", className: "compare-norm" },
  { key: "normB", label: "B per step per rank", className: "compare-norm" },
  {
    key: "change",
    label: "Change per step per rank",
    cellClass: (line) =>
      line.judged === "better" ? "delta-down" : line.judged === "worse" ? "delta-up" : undefined,
    cellTitle: (line) => (line.judged ? `B is ${line.judged} per step per rank` : undefined),
  },
  { key: "a", label: "A total" },
  { key: "b", label: "B total" },
  { key: "delta", label: "B − A total" },
];

type RankPair = Comparison["ranks"][number];

const RANK_COLUMNS: DataColumn<RankPair>[] = [
  { key: "rank", label: "Rank" },
  ...(
    [
      ["dur_ns", "Step"],
      ["gap_ns", "Gap"],
      ["compute_ns", "Fwd + bwd"],
      ["tail_ns", "Tail"],
    ] as const
  ).flatMap(([key, label]) =>
    (["a", "b"] as const).map((side): DataColumn<RankPair> => ({
      key: `${side}_${key}`,
      label: `${label} ${side.toUpperCase()}`,
      format: formatDuration,
    })),
  ),
];

type DiffRow = DiffSection["rows"][number];

const DIFF_COLUMNS: DataColumn<DiffRow>[] = [
  { key: "name", label: "Name", className: "diff-name", cellTitle: (row) => row.name },
  { key: "status", label: "Change" },
  { key: "count_a", label: "Calls A", format: formatCount },
  { key: "count_b", label: "Calls B", format: formatCount },
  {
    key: "norm_ns_a",
    label: "Per step per rank A",
    format: formatDuration,
    className: "compare-norm",
  },
  {
    key: "norm_ns_b",
    label: "Per step per rank B",
    format: formatDuration,
    className: "compare-norm",
  },
  {
    key: "norm_delta_ns",
    label: "Change per step per rank",
    format: signedDuration,
    cellClass: (row) =>
      row.norm_delta_ns > 0 ? "delta-up" : row.norm_delta_ns < 0 ? "delta-down" : undefined,
  },
  { key: "total_ns_a", label: "Time A", format: formatDuration },
  { key: "total_ns_b", label: "Time B", format: formatDuration },
  { key: "delta_ns", label: "B − A", format: signedDuration },
];

function ComparisonPanels({ data }: { data: Comparison }) {
  const lines = useMemo(() => metricLines(data), [data]);
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
        <Table
          label="Metrics side by side"
          className="compare-table"
          rows={lines}
          columns={LINE_COLUMNS}
          unsorted
          rowKey={(line) => line.key}
          rowAttributes={(line) => ({ "data-metric": line.metric })}
        />
      </Panel>
      <DiffPanel title="Kernels" section={data.kernels} />
      <DiffPanel title="Annotations" section={data.annotations} />
      <Panel
        title="Per rank"
        size="wide"
        note={`Each rank both jobs have (A has ${formatCount(data.a.ranks)}, B ${formatCount(data.b.ranks)}): its mean step and its parts, in the comparison's window.`}
        emptyReason={data.ranks.length ? null : "the two jobs have no ranks with steps in common"}
      >
        <Table
          label="Per rank"
          className="compare-table"
          rows={data.ranks}
          columns={RANK_COLUMNS}
          rowKey={(row) => row.rank}
          defaultSort={{ key: "rank", desc: false }}
        />
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
      {/* Unsorted: the first rows are the largest changes, and a sort of those alone would mislead. */}
      <Table
        label={`${title} diff`}
        className="compare-table"
        rows={rows}
        columns={DIFF_COLUMNS}
        unsorted
        rowKey={(row) => row.name}
      />
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
