import { useMemo } from "react";
import { Link, useSearchParams } from "react-router";
import { type Cluster, type CollectiveRank, type RankRow, useCluster } from "../../api/cluster";
import type { TrainingJob } from "../../api/types";
import { Chart } from "../../charts/Chart";
import { type DataColumn, Table } from "../../components/DataTable";
import { ErrorAlert, Loading } from "../../components/Feedback";
import { WindowSwitch } from "../../components/JobWindow";
import { WindowCaption } from "../../lib/window";
import { LoadedJobGate } from "../../components/LoadedJobGate";
import { MissingRanksNote } from "../../components/MissingRanks";
import { Panel } from "../../components/Panel";
import { SlowBanner } from "../../components/SlowBanner";
import { formatBytes, formatCount, formatDuration, formatPercent, plural } from "../../lib/format";
import {
  byWait,
  collectiveHeatmapOption,
  formatBandwidth,
  stepBarOption,
  timelineLink,
} from "./clusterView";
import "./cluster.css";

export function ClusterPage() {
  return (
    <>
      <h1>Cluster</h1>
      <LoadedJobGate page="cluster view">{(job) => <JobCluster job={job} />}</LoadedJobGate>
    </>
  );
}

function JobCluster({ job }: { job: TrainingJob }) {
  const [params, setParams] = useSearchParams();
  const stepText = params.get("step");
  const step = stepText && /^-?\d+$/.test(stepText) ? Number(stepText) : null;
  const cluster = useCluster(job.id, step);
  const chooseStep = (value: string) =>
    setParams(value === "" ? {} : { step: value }, { replace: true });
  return (
    <>
      <div className="cluster-heading">
        <h2 className="job-heading">{job.name}</h2>
        <label className="cluster-step">
          Step{" "}
          <select
            aria-label="Step"
            value={step === null ? "" : String(step)}
            onChange={(e) => chooseStep(e.target.value)}
          >
            <option value="">Average over all steps</option>
            {cluster.data?.steps.map((s) => (
              <option key={s} value={s}>
                Step {s}
              </option>
            ))}
          </select>
        </label>
      </div>
      <MissingRanksNote jobId={job.id} />
      <WindowSwitch job={job} window={cluster.data?.window} />
      {cluster.isError && <ErrorAlert error={cluster.error} />}
      {cluster.isPending && <Loading what="the cluster view" />}
      {cluster.data && (
        <WindowCaption.Provider value={cluster.data.window.label}>
          <ClusterPanels data={cluster.data} jobId={job.id} />
        </WindowCaption.Provider>
      )}
    </>
  );
}

function ClusterPanels({ data, jobId }: { data: Cluster; jobId: number }) {
  const barOption = useMemo(() => stepBarOption(data.ranks), [data.ranks]);
  const heatOption = useMemo(
    () => collectiveHeatmapOption(data.collective_ranks),
    [data.collective_ranks],
  );
  return (
    <>
      <SlowBanner data={data} />
      {data.steps_inferred && (
        <p className="alert alert-info">
          Some ranks have no step annotations (ProfilerStep#n or step_n): each of their traces
          counts as one inferred step spanning its GPU work.
        </p>
      )}
      <div className="panel-grid cluster-grid">
        <Panel
          title="Captured steps per rank"
          size="wide"
          emptyReason={data.ranks.length ? null : "no steps with GPU work in this profile"}
          note={
            <>
              Per rank and {data.step === null ? "averaged over steps" : `step ${data.step}`}: the
              iteration gap (step start to the first computation kernel: data loading, host work),
              forward + backward (first to last computation kernel) and the iteration tail (after
              the last computation kernel: communication and synchronisation) add up to the rank's
              mean captured step.{" "}
              {data.step_time.median_ns !== null &&
                `Step time: ${formatDuration(data.step_time.median_ns)} (${data.step_time.label}, all ranks).`}
            </>
          }
        >
          <Chart option={barOption} height={280} label="Mean captured step per rank, stacked" />
          <RankTable rows={data.ranks} jobId={jobId} />
        </Panel>
        <Panel
          title="Collectives"
          size="wide"
          emptyReason={data.collectives.length ? null : "no communication kernels in this profile"}
          note={
            <>
              Algorithmic bandwidth = message bytes / time, over the calls whose size the trace
              records; bus bandwidth = algorithmic × 2(n−1)/n for all-reduce, (n−1)/n for all-gather
              and reduce-scatter, 1 for broadcast, reduce and send/recv (n = ranks in the group), as
              nccl-tests reports them.
            </>
          }
        >
          <CollectivesTable data={data} />
        </Panel>
        <Panel
          title="Waiting in collectives per rank"
          size="wide"
          emptyReason={
            data.collective_ranks.length ? null : "no communication kernels in this profile"
          }
          note={
            <>
              A collective finishes only when every rank has joined it: a rank's wait at a call is
              the latest start of that call over the ranks minus its own start, at most its own
              kernel time. Known once all ranks are read, for collectives every rank called equally
              often.
            </>
          }
        >
          <CollectiveRanksTable rows={data.collective_ranks} />
        </Panel>
        <Panel
          title="Communication time per rank and collective"
          size="wide"
          emptyReason={
            data.collective_ranks.length ? null : "no communication kernels in this profile"
          }
        >
          <Chart
            option={heatOption}
            height={Math.max(
              160,
              60 + 28 * new Set(data.collective_ranks.map((c) => c.collective)).size + 60,
            )}
            label="Heat map of communication time, rank by collective"
          />
        </Panel>
        <Panel
          title="Devices"
          size="wide"
          emptyReason={data.devices.length ? null : "no GPU kernels in this profile"}
          note="Kernel time per GPU (kernels only, as on the Dashboard) and its share by kernel type; time in memory copies and sets beside it; peak memory where the collector sampled it."
        >
          <DevicesTable data={data} />
        </Panel>
      </div>
    </>
  );
}

function durationColumn<R>(key: keyof R & string, label: string): DataColumn<R> {
  return { key, label, format: formatDuration };
}

function rankColumns(jobId: number): DataColumn<RankRow>[] {
  return [
    { key: "rank", label: "Rank" },
    { key: "node", label: "Node" },
    durationColumn("dur_ns", "Mean captured step"),
    durationColumn("gap_ns", "Gap"),
    durationColumn("compute_ns", "Fwd + bwd"),
    durationColumn("tail_ns", "Tail"),
    durationColumn("comm_ns", "Comm kernels"),
    durationColumn("sync_wait_ns", "Sync wait"),
    { key: "overlap_pct", label: "Comm overlap", format: (pct) => `${pct.toFixed(1)}%` },
    {
      key: "details",
      label: "Details",
      unsortable: true,
      cell: (row) => <Link to={timelineLink(jobId, row)}>Timeline</Link>,
    },
  ];
}

function RankTable({ rows, jobId }: { rows: RankRow[]; jobId: number }) {
  const columns = useMemo(() => rankColumns(jobId), [jobId]);
  return (
    <>
      <Table
        label="Ranks"
        className="cluster-table"
        rows={rows}
        columns={columns}
        rowKey={(row) => row.rank}
        defaultSort={{ key: "rank", desc: false }}
      />
      <p className="panel-note">
        {plural(rows.length, "rank")}. Sync wait: how long a rank waited for the slowest rank of the
        step (latest gap + compute of the step minus its own). Comm overlap: the share of
        communication kernel time during which computation ran too.
      </p>
    </>
  );
}

const COLLECTIVE_COLUMNS: DataColumn<Cluster["collectives"][number]>[] = [
  { key: "collective", label: "Collective" },
  {
    key: "group_size",
    label: "Group size",
    cell: (row) => (row.group_size > 0 ? row.group_size : "—"),
  },
  { key: "ranks", label: "Ranks" },
  { key: "count", label: "Calls", format: formatCount },
  durationColumn("total_ns", "Time"),
  durationColumn("mean_ns", "Mean"),
  {
    key: "bytes",
    label: "Bytes",
    cell: (row) => (row.sized_ns ? formatBytes(row.bytes) : "not recorded"),
  },
  { key: "algbw_gbps", label: "Algorithmic bw", format: formatBandwidth },
  { key: "busbw_gbps", label: "Bus bw", format: formatBandwidth },
];

function CollectivesTable({ data }: { data: Cluster }) {
  return (
    <Table
      label="Collectives"
      className="cluster-table"
      rows={data.collectives}
      columns={COLLECTIVE_COLUMNS}
      rowKey={(row) => `${row.collective}:${row.group_size}`}
    />
  );
}

const COLLECTIVE_RANK_COLUMNS: DataColumn<CollectiveRank>[] = [
  { key: "rank", label: "Rank" },
  { key: "collective", label: "Collective" },
  { key: "count", label: "Calls", format: formatCount },
  durationColumn("total_ns", "Time"),
  {
    key: "bytes",
    label: "Bytes",
    cell: (row) => (row.bytes ? formatBytes(row.bytes) : "not recorded"),
  },
  {
    key: "wait_ns",
    label: "Wait",
    cell: (row) => (row.wait_ns === null ? "not derivable" : formatDuration(row.wait_ns)),
  },
  durationColumn("max_wait_ns", "Longest wait"),
  {
    key: "wait_share",
    label: "Share of its time",
    value: (row) => (row.wait_ns === null || !row.total_ns ? null : row.wait_ns / row.total_ns),
    cell: (row) => (row.wait_ns === null ? "—" : formatPercent(row.wait_ns, row.total_ns)),
  },
];

function CollectiveRanksTable({ rows }: { rows: readonly CollectiveRank[] }) {
  const ordered = useMemo(() => byWait(rows), [rows]);
  return (
    <div className="cluster-scroll">
      <Table
        label="Collective waits per rank"
        className="cluster-table"
        rows={ordered}
        columns={COLLECTIVE_RANK_COLUMNS}
        rowKey={(row) => `${row.rank}:${row.collective}`}
      />
    </div>
  );
}

type Device = Cluster["devices"][number];

const DEVICE_COLUMNS: DataColumn<Device>[] = [
  { key: "rank", label: "Rank" },
  { key: "node", label: "Node" },
  { key: "device", label: "GPU" },
  { key: "name", label: "Name", cell: (row) => row.name || "—" },
  durationColumn("kernel_ns", "Kernel time"),
  {
    key: "compute_share",
    label: "Compute",
    value: (row) => (row.kernel_ns ? row.compute_ns / row.kernel_ns : null),
    cell: (row) => formatPercent(row.compute_ns, row.kernel_ns),
  },
  {
    key: "comm_share",
    label: "Communication",
    value: (row) => (row.kernel_ns ? row.comm_ns / row.kernel_ns : null),
    cell: (row) => formatPercent(row.comm_ns, row.kernel_ns),
  },
  durationColumn("memory_ns", "Memory ops"),
  {
    key: "peak_memory_bytes",
    label: "Peak memory",
    cell: (row) =>
      (row.peak_memory_bytes === null ? "not sampled" : formatBytes(row.peak_memory_bytes)) +
      (row.memory_bytes ? ` of ${formatBytes(row.memory_bytes)}` : ""),
  },
  {
    key: "flops",
    label: "FLOPs",
    cell: (row) => (row.flops === null ? "not recorded" : formatCount(row.flops)),
  },
];

function DevicesTable({ data }: { data: Cluster }) {
  return (
    <Table
      label="Devices"
      className="cluster-table"
      rows={data.devices}
      columns={DEVICE_COLUMNS}
      rowKey={(row) => `${row.rank}:${row.device}`}
    />
  );
}
