import { useMemo, useState } from "react";
import { Link, useNavigate, useSearchParams } from "react-router";
import { ApiError } from "../../api/client";
import {
  type Cause,
  type RankSteps,
  type Series,
  type SeriesRun,
  useSeries,
  useSeriesRuns,
  useSeriesSearch,
  useSetJobSeries,
  useVerdict,
} from "../../api/history";
import { Chart } from "../../charts/Chart";
import type { ChartOption } from "../../charts/echarts";
import { type LineSeries, lineOption } from "../../charts/options";
import { type DataColumn, DataTable } from "../../components/DataTable";
import { EmptyState, ErrorAlert, Loading } from "../../components/Feedback";
import { Panel } from "../../components/Panel";
import { formatDateTime, formatDuration } from "../../lib/format";
import { compareLink } from "../../lib/navigation";
import {
  kernelTypeLines,
  latestJudged,
  readSeries,
  runAt,
  runLabel,
  stepLines,
  utilisationLines,
  verdictLabel,
} from "./historyView";
import { SeriesPicker } from "./SeriesPicker";
import { SettingsCard } from "./SeriesSettings";
import "./history.css";

export function HistoryPage() {
  const [params, setParams] = useSearchParams();
  const named = readSeries(params);
  // The whole list's first page: the series shown when the address names none (the first by
  // name), and whether there is any.
  const first = useSeriesSearch("");
  const fallback = first.data?.pages[0]?.results[0] ?? null;
  const chosen = named ?? fallback?.id ?? null;
  const series = useSeries(chosen);
  const runs = useSeriesRuns(series.data ? chosen : null);
  const choose = (id: number) => setParams(new URLSearchParams({ series: String(id) }));
  const none = first.data?.pages[0]?.count === 0 && named === null;
  const gone = series.error instanceof ApiError && series.error.status === 404;
  return (
    <>
      <h1>History</h1>
      <p className="muted">
        A model's runs over time, each judged against its baseline: the series' chosen run, else the
        previous run that passed.
      </p>
      {first.isError && <ErrorAlert error={first.error} />}
      {first.isPending && named === null && <Loading what="the series" />}
      {none && (
        <EmptyState title="No series yet">
          <p>
            A job joins a series when it is uploaded: name it with PROFILER_SERIES or
            <code> profiler-collect upload --series</code>, or it joins the series named after the
            job without its run suffix.
          </p>
        </EmptyState>
      )}
      {!none && (
        <SeriesPicker value={series.data ?? null} onChange={(picked) => choose(picked.id)} />
      )}
      {gone && (
        <EmptyState title="This series has no runs left">
          <p>Its jobs were deleted or moved to another series. Choose a series above.</p>
        </EmptyState>
      )}
      {series.isError && !gone && <ErrorAlert error={series.error} />}
      {runs.isError && <ErrorAlert error={runs.error} />}
      {series.data && runs.data && (
        <SeriesView
          key={series.data.id}
          series={series.data}
          runs={runs.data}
          onMoved={(to) => {
            if (runs.data.length === 1) choose(to);
          }}
        />
      )}
    </>
  );
}

function SeriesView({
  series,
  runs,
  onMoved,
}: {
  series: Series;
  runs: SeriesRun[];
  /** A run moved to the series `to`: the page follows it when it was the last run here. */
  onMoved: (to: number) => void;
}) {
  const [picked, setPicked] = useState<number | null>(null);
  const shown = runs.find((r) => r.job === picked) ?? latestJudged(runs);
  const columns = useMemo(() => runColumns(), []);
  return (
    <>
      <div className="panel-grid">
        <RunChart title="Step time" unit="ms" runs={runs} toLines={stepLines} />
        <RunChart
          title="GPU utilisation"
          unit="%"
          runs={runs}
          toLines={utilisationLines}
          yMax={100}
        />
        <RunChart
          title="Kernel time by type per step per rank"
          unit="ms"
          runs={runs}
          toLines={kernelTypeLines}
        />
        <SettingsCard series={series} runs={runs} />
      </div>
      <DataTable
        title="Runs"
        rows={runs}
        columns={columns}
        rowKey={(run) => run.job}
        fileName={`${series.name}-runs`}
        onRowClick={(run) => setPicked(run.job)}
        isActive={(run) => run.job === shown?.job}
        rowAttributes={(run) => ({ "data-verdict": run.verdict_status ?? undefined })}
        wide
      />
      {shown && <VerdictCard run={shown} onMoved={onMoved} />}
      {shown?.figures?.step_per_rank && (
        <DataTable
          title={`Step time per rank of ${shown.job_name}`}
          rows={shown.figures.step_per_rank}
          columns={RANK_COLUMNS}
          rowKey={(row) => row.rank}
          fileName={`${shown.job_name}-step-per-rank`}
        />
      )}
      {shown?.figures && (
        <DataTable
          title={`Top kernels and operators of ${shown.job_name}`}
          rows={topWork(shown.figures)}
          columns={TOP_COLUMNS}
          fileName={`${shown.job_name}-top`}
          defaultSort={{ key: "ns_per_step", desc: true }}
          wide
        />
      )}
    </>
  );
}

function RunChart(props: {
  title: string;
  unit: string;
  runs: SeriesRun[];
  /** A module function, so that the chart is drawn again only when the runs change. */
  toLines: (runs: readonly SeriesRun[]) => LineSeries[];
  yMax?: number;
}) {
  const { title, unit, runs, toLines, yMax } = props;
  const lines = useMemo(() => toLines(runs), [toLines, runs]);
  const empty = lines.every((line) => line.points.length === 0);
  const option = useMemo(
    () =>
      withRunMarkers(
        lineOption(lines, {
          xName: "Run",
          yMax,
          formatX: (x) => runLabel(runs, x),
          formatY: (y) => `${Number(y.toFixed(1))} ${unit}`,
        }),
      ),
    [lines, runs, unit, yMax],
  );
  const navigate = useNavigate();
  const openRun = (x: number) => {
    const run = runAt(runs, x);
    if (run) navigate(`/jobs/${run.job}/dashboard`);
  };
  return (
    <Panel
      title={title}
      emptyReason={empty ? "no parsed run has these figures yet" : null}
      note="One point per run, oldest first; click a point to open its run."
    >
      <Chart option={option} height={220} label={`${title} per run`} onPointClick={openRun} />
    </Panel>
  );
}

/** Each run drawn as a marker too: a series with one run has no line to draw. */
function withRunMarkers(option: ChartOption): ChartOption {
  const series = Array.isArray(option.series) ? option.series : [];
  return { ...option, series: series.map((line) => ({ ...line, showSymbol: true })) };
}

function runColumns(): DataColumn<SeriesRun>[] {
  return [
    {
      key: "job_name",
      label: "Run",
      cell: (run) => (
        <Link to={`/jobs/${run.job}/dashboard`} onClick={(e) => e.stopPropagation()}>
          {run.job_name}
        </Link>
      ),
    },
    {
      // When it ran (its process's start; an imported trace's upload): the runs' order.
      key: "ran_at",
      label: "Ran",
      value: (run) => run.ran_at,
      cell: (run) => formatDateTime(run.ran_at),
    },
    {
      key: "median",
      label: "Step time (median)",
      value: (run) => run.figures?.step_p50_ns ?? null,
      format: formatDuration,
    },
    {
      key: "p95",
      label: "p95 step",
      value: (run) => run.figures?.step_p95_ns ?? null,
      format: formatDuration,
    },
    {
      key: "gpu",
      label: "GPU util.",
      value: (run) => run.figures?.gpu_util_pct ?? null,
      format: (v) => `${v.toFixed(1)} %`,
    },
    {
      key: "verdict_status",
      label: "Verdict",
      value: (run) => verdictLabel(run.verdict_status),
      cellClass: (run) => (run.verdict_status === "regression" ? "delta-up" : undefined),
    },
    {
      key: "change_pct",
      label: "Median change",
      value: (run) => run.change_pct,
      format: (v) => `${v > 0 ? "+" : ""}${v.toFixed(1)} %`,
    },
    {
      key: "compare",
      label: "Against its baseline",
      unsortable: true,
      cell: (run) =>
        run.verdict_baseline ? (
          <Link
            to={compareLink(run.verdict_baseline, run.job)}
            onClick={(e) => e.stopPropagation()}
          >
            Compare
          </Link>
        ) : (
          (run.is_baseline && "baseline") || "—"
        ),
    },
  ];
}

const RANK_COLUMNS: DataColumn<RankSteps>[] = [
  { key: "rank", label: "Rank" },
  { key: "steps", label: "Steps" },
  { key: "p50_ns", label: "Step time (median)", format: formatDuration },
  { key: "p95_ns", label: "p95 step", format: formatDuration },
];

type TopRow = { kind: string; name: string; ns_per_step: number };

const TOP_COLUMNS: DataColumn<TopRow>[] = [
  { key: "name", label: "Name", code: true },
  { key: "kind", label: "Kind" },
  { key: "ns_per_step", label: "Time per step per rank", format: formatDuration },
];

/** A run's busiest kernels (GPU time) and host operators (self time), per step per rank. */
function topWork(figures: NonNullable<SeriesRun["figures"]>): TopRow[] {
  return [
    ...figures.top_kernels.map((k) => ({ kind: "kernel", ...k })),
    ...figures.top_operators.map((o) => ({ kind: "operator (self)", ...o })),
  ];
}

const CAUSE_COLUMNS: DataColumn<Cause>[] = [
  { key: "name", label: "Cause", code: true },
  { key: "kind", label: "Kind", value: (c) => c.kind.replace("_", " ") },
  { key: "baseline_ns", label: "Baseline per step per rank", format: formatDuration },
  { key: "run_ns", label: "Run per step per rank", format: formatDuration },
  {
    key: "delta_ns",
    label: "Change",
    format: (v) => `${v > 0 ? "+" : v < 0 ? "−" : ""}${formatDuration(Math.abs(v))}`,
  },
  {
    key: "step_share_pct",
    label: "Of the median step",
    format: (v) => `${v.toFixed(1)} %`,
  },
  { key: "detail", label: "What changed", wrap: true },
];

function VerdictCard({ run, onMoved }: { run: SeriesRun; onMoved: (to: number) => void }) {
  const verdict = useVerdict(run.job);
  const data = verdict.data;
  return (
    <>
      <section className="card history-verdict" aria-label="Verdict">
        <h3>
          Verdict of {run.job_name}:{" "}
          <span className={`verdict verdict-${data?.status ?? "pending"}`}>
            {verdictLabel(data?.status)}
          </span>
        </h3>
        {verdict.isError && <ErrorAlert error={verdict.error} />}
        {data && (
          <>
            <p>
              {data.baseline_name ? (
                <>
                  Against <Link to={`/jobs/${data.baseline}/dashboard`}>{data.baseline_name}</Link>
                  .{" "}
                </>
              ) : null}
              {data.reason}
            </p>
            {data.test && (
              <p className="muted">
                {data.test.name}: U = {data.test.u}, p = {data.test.p_value.toPrecision(3)} (
                {data.test.method}, {data.test.n_run} steps against {data.test.n_baseline}).
              </p>
            )}
          </>
        )}
        <MoveRun run={run} onMoved={onMoved} />
      </section>
      {data && data.causes.length > 0 && (
        <DataTable
          title="Causes, largest first"
          rows={data.causes}
          columns={CAUSE_COLUMNS}
          fileName={`${run.job_name}-causes`}
          unsorted
          wide
        />
      )}
    </>
  );
}

/** The job's owner moves a run to another series (created if new). */
function MoveRun({ run, onMoved }: { run: SeriesRun; onMoved: (to: number) => void }) {
  const [name, setName] = useState("");
  const move = useSetJobSeries(run.job);
  return (
    <form
      className="history-move"
      onSubmit={(e) => {
        e.preventDefault();
        if (name.trim()) move.mutate(name.trim(), { onSuccess: (to) => onMoved(to.series_id) });
      }}
    >
      <label>
        Move this run to series{" "}
        <input value={name} onChange={(e) => setName(e.target.value)} aria-label="New series" />
      </label>
      <button type="submit" disabled={!name.trim() || move.isPending}>
        Move
      </button>
      {move.isError && <ErrorAlert error={move.error} />}
    </form>
  );
}
