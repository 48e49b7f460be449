import { useMemo, useState } from "react";
import { Link, useSearchParams } from "react-router";
import { type Cluster, type CollectiveRank, type RankRow, useCluster } from "../../api/cluster";
import type { TrainingJob } from "../../api/types";
import { Chart } from "../../charts/Chart";
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
  type RankSortKey,
  type Sort,
  sortRanks,
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
          title="Step time per rank"
          size="wide"
          emptyReason={data.ranks.length ? null : "no steps with GPU work in this profile"}
          note={
            <>
              Per rank and {data.step === null ? "averaged over steps" : `step ${data.step}`}: the
              iteration gap (step start to the first computation kernel: data loading, host work),
              forward + backward (first to last computation kernel) and the iteration tail (after
              the last computation kernel: communication and synchronisation) add up to the step
              time.
            </>
          }
        >
          <Chart option={barOption} height={280} label="Step time per rank, stacked" />
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

const RANK_COLUMNS: { key: RankSortKey; label: string }[] = [
  { key: "rank", label: "Rank" },
  { key: "node", label: "Node" },
  { key: "dur_ns", label: "Step" },
  { key: "gap_ns", label: "Gap" },
  { key: "compute_ns", label: "Fwd + bwd" },
  { key: "tail_ns", label: "Tail" },
  { key: "comm_ns", label: "Comm kernels" },
  { key: "sync_wait_ns", label: "Sync wait" },
  { key: "overlap_pct", label: "Comm overlap" },
];

function RankTable({ rows, jobId }: { rows: RankRow[]; jobId: number }) {
  const [sort, setSort] = useState<Sort>({ key: "rank", descending: false });
  const sorted = useMemo(() => sortRanks(rows, sort), [rows, sort]);
  const toggle = (key: RankSortKey) =>
    setSort((old) => ({
      key,
      descending: old.key === key ? !old.descending : key !== "rank" && key !== "node",
    }));
  return (
    <div className="table-wrap">
      <table className="table cluster-table" aria-label="Ranks">
        <thead>
          <tr>
            {RANK_COLUMNS.map((column) => (
              <th
                key={column.key}
                aria-sort={
                  sort.key === column.key ? (sort.descending ? "descending" : "ascending") : "none"
                }
              >
                <button type="button" className="sort-button" onClick={() => toggle(column.key)}>
                  {column.label}
                  <span className="sort-arrow" aria-hidden="true">
                    {sort.key === column.key ? (sort.descending ? "▼" : "▲") : ""}
                  </span>
                </button>
              </th>
            ))}
            <th>Details</th>
          </tr>
        </thead>
        <tbody>
          {sorted.map((row) => (
            <tr key={row.rank}>
              <td>{row.rank}</td>
              <td>{row.node}</td>
              <td>{formatDuration(row.dur_ns)}</td>
              <td>{formatDuration(row.gap_ns)}</td>
              <td>{formatDuration(row.compute_ns)}</td>
              <td>{formatDuration(row.tail_ns)}</td>
              <td>{formatDuration(row.comm_ns)}</td>
              <td>{formatDuration(row.sync_wait_ns)}</td>
              <td>{row.overlap_pct === null ? "—" : `${row.overlap_pct.toFixed(1)}%`}</td>
              <td>
                <Link to={timelineLink(jobId, row)}>Timeline</Link>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="panel-note">
        {plural(rows.length, "rank")}. Sync wait: how long a rank waited for the slowest rank of the
        step (latest gap + compute of the step minus its own). Comm overlap: the share of
        communication kernel time during which computation ran too.
      </p>
    </div>
  );
}

function CollectivesTable({ data }: { data: Cluster }) {
  return (
    <div className="table-wrap">
      <table className="table cluster-table" aria-label="Collectives">
        <thead>
          <tr>
            <th>Collective</th>
            <th>Group size</th>
            <th>Ranks</th>
            <th>Calls</th>
            <th>Time</th>
            <th>Mean</th>
            <th>Bytes</th>
            <th>Algorithmic bw</th>
            <th>Bus bw</th>
          </tr>
        </thead>
        <tbody>
          {data.collectives.map((row) => (
            <tr key={`${row.collective}:${row.group_size}`}>
              <td>{row.collective}</td>
              <td>{row.group_size > 0 ? row.group_size : "—"}</td>
              <td>{row.ranks}</td>
              <td>{formatCount(row.count)}</td>
              <td>{formatDuration(row.total_ns)}</td>
              <td>{formatDuration(row.mean_ns)}</td>
              <td>{row.sized_ns ? formatBytes(row.bytes) : "not recorded"}</td>
              <td>{formatBandwidth(row.algbw_gbps)}</td>
              <td>{formatBandwidth(row.busbw_gbps)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function CollectiveRanksTable({ rows }: { rows: readonly CollectiveRank[] }) {
  const ordered = useMemo(() => byWait(rows), [rows]);
  return (
    <div className="table-wrap cluster-scroll">
      <table className="table cluster-table" aria-label="Collective waits per rank">
        <thead>
          <tr>
            <th>Rank</th>
            <th>Collective</th>
            <th>Calls</th>
            <th>Time</th>
            <th>Bytes</th>
            <th>Wait</th>
            <th>Longest wait</th>
            <th>Share of its time</th>
          </tr>
        </thead>
        <tbody>
          {ordered.map((row) => (
            <tr key={`${row.rank}:${row.collective}`}>
              <td>{row.rank}</td>
              <td>{row.collective}</td>
              <td>{formatCount(row.count)}</td>
              <td>{formatDuration(row.total_ns)}</td>
              <td>{row.bytes ? formatBytes(row.bytes) : "not recorded"}</td>
              <td>{row.wait_ns === null ? "not derivable" : formatDuration(row.wait_ns)}</td>
              <td>{row.max_wait_ns === null ? "—" : formatDuration(row.max_wait_ns)}</td>
              <td>{row.wait_ns === null ? "—" : formatPercent(row.wait_ns, row.total_ns)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function DevicesTable({ data }: { data: Cluster }) {
  return (
    <div className="table-wrap">
      <table className="table cluster-table" aria-label="Devices">
        <thead>
          <tr>
            <th>Rank</th>
            <th>Node</th>
            <th>GPU</th>
            <th>Name</th>
            <th>Kernel time</th>
            <th>Compute</th>
            <th>Communication</th>
            <th>Memory ops</th>
            <th>Peak memory</th>
            <th>FLOPs</th>
          </tr>
        </thead>
        <tbody>
          {data.devices.map((row) => (
            <tr key={`${row.rank}:${row.device}`}>
              <td>{row.rank}</td>
              <td>{row.node}</td>
              <td>{row.device}</td>
              <td>{row.name || "—"}</td>
              <td>{formatDuration(row.kernel_ns)}</td>
              <td>{formatPercent(row.compute_ns, row.kernel_ns)}</td>
              <td>{formatPercent(row.comm_ns, row.kernel_ns)}</td>
              <td>{formatDuration(row.memory_ns)}</td>
              <td>
                {row.peak_memory_bytes === null
                  ? "not sampled"
                  : formatBytes(row.peak_memory_bytes)}
                {row.memory_bytes ? ` of ${formatBytes(row.memory_bytes)}` : ""}
              </td>
              <td>{row.flops === null ? "not recorded" : formatCount(row.flops)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
