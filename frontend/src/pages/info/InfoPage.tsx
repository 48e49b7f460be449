import { useJobSummary } from "../../api/ranks";
import type { TrainingJob } from "../../api/types";
import { JobStateBadge, PartialBadge } from "../../components/Badges";
import { type DataColumn, Table } from "../../components/DataTable";
import { LoadedJobGate } from "../../components/LoadedJobGate";
import { MissingRanksNote } from "../../components/MissingRanks";
import { ReadWarnings } from "../../components/ReadWarnings";
import { formatBytes, formatDateTime, formatElapsedMs, formatSeconds } from "../../lib/format";
import { isPartial } from "../../lib/jobs";
import { useNow } from "../../lib/useNow";
import { CaptureCard } from "./CaptureCard";
import { EndJob } from "./EndJob";
import { KeyValueTable } from "./KeyValueTable";
import { PartsTable } from "./PartsTable";
import { RunVerdict } from "./RunVerdict";
import { perNodeSummary } from "./summary";

export function InfoPage() {
  return (
    <>
      <h1>Info</h1>
      <LoadedJobGate page="Info page" evenFailed>
        {(job) => <JobInfo job={job} />}
      </LoadedJobGate>
    </>
  );
}

function JobInfo({ job }: { job: TrainingJob }) {
  const nowMs = useNow();
  return (
    <>
      <h2 className="job-heading">
        {/* The state (the status checked against the parts): a job whose every part failed
            reads Failed here too, not the Completed its sender reported. */}
        {job.name} <JobStateBadge job={job} />
        {isPartial(job) && <PartialBadge />}
      </h2>
      <EndJob job={job} />
      <ReadWarnings warnings={job.read_warnings} />
      <MissingRanksNote jobId={job.id} />
      <RunVerdict jobId={job.id} />
      <div className="info-grid">
        <section className="card" aria-labelledby="info-run">
          <h3 id="info-run">Run</h3>
          <dl className="facts">
            <dt>Owner</dt>
            <dd>{job.owner || "—"}</dd>
            <dt>Created</dt>
            <dd>{formatDateTime(job.created_at)}</dd>
            <dt>Started</dt>
            <dd>{formatDateTime(job.started_at)}</dd>
            <dt>Ended</dt>
            <dd>{formatDateTime(job.ended_at)}</dd>
            <dt>Duration</dt>
            <dd>{duration(job, nowMs)}</dd>
            <dt>Profiled</dt>
            <dd>
              <Profiled jobId={job.id} />
            </dd>
            <dt>Profile size</dt>
            <dd>{formatBytes(job.size_bytes)}</dd>
          </dl>
        </section>
        <section className="card" aria-labelledby="info-compute">
          <h3 id="info-compute">Compute</h3>
          <dl className="facts">
            <dt>Instance type</dt>
            <dd>{job.instance_type || "—"}</dd>
            <dt>Instance count</dt>
            <dd>{job.instance_count ?? "—"}</dd>
            <dt>Node names</dt>
            <dd>{job.nodes.map((node) => node.name).join(", ") || "—"}</dd>
            <dt>GPUs per node</dt>
            <dd>{perNodeSummary(job.nodes, "gpu_count")}</dd>
            <dt>CPUs per node</dt>
            <dd>{perNodeSummary(job.nodes, "cpu_count")}</dd>
          </dl>
        </section>
        <section className="card" aria-labelledby="info-framework">
          <h3 id="info-framework">Framework</h3>
          <dl className="facts">
            <dt>Framework</dt>
            <dd>{job.framework || "—"}</dd>
            <dt>Version</dt>
            <dd>{job.framework_version || "—"}</dd>
          </dl>
        </section>
      </div>
      <div className="info-grid info-grid-wide">
        <section className="card" aria-labelledby="info-resources">
          <h3 id="info-resources">Resource identifiers</h3>
          <KeyValueTable
            label="Resource identifiers"
            value={job.resource_ids}
            empty="No resource identifiers were recorded."
          />
        </section>
        <section className="card" aria-labelledby="info-hyperparameters">
          <h3 id="info-hyperparameters">Hyperparameters</h3>
          <KeyValueTable
            label="Hyperparameters"
            value={job.hyperparameters}
            empty="No hyperparameters were recorded."
          />
        </section>
      </div>
      <CaptureCard jobId={job.id} />
      <section className="card" aria-labelledby="info-nodes">
        <h3 id="info-nodes">Nodes</h3>
        {job.nodes.length === 0 ? (
          <p className="muted">No node has uploaded a part yet.</p>
        ) : (
          <Table label="Nodes" rows={job.nodes} columns={NODE_COLUMNS} rowKey={(node) => node.id} />
        )}
      </section>
      <PartsTable jobId={job.id} />
    </>
  );
}

const NODE_COLUMNS: DataColumn<TrainingJob["nodes"][number]>[] = [
  { key: "name", label: "Name" },
  { key: "hostname", label: "Hostname", cell: (node) => node.hostname || "—" },
  { key: "gpu_count", label: "GPUs", cell: (node) => node.gpu_count ?? "not recorded" },
  { key: "cpu_count", label: "CPUs", cell: (node) => node.cpu_count ?? "not recorded" },
];

/** When the profile's first event was recorded and the span of its events (the Dashboard's
 * profile span): for an imported trace, the only word on when it ran. A trace aligned on its
 * own start does not say when. */
function Profiled({ jobId }: { jobId: number }) {
  const summary = useJobSummary(jobId).data;
  if (summary?.start_ns == null || summary.span_ns == null) return <>—</>;
  const span = `span ${formatSeconds(summary.span_ns)}`;
  if (summary.recorded_start_ns == null) return <>{span} (its clock does not say when)</>;
  const start = new Date(Math.floor(summary.recorded_start_ns / 1e6)).toISOString();
  return (
    <>
      {formatDateTime(start)}, {span}
    </>
  );
}

function duration(job: TrainingJob, nowMs: number): string {
  if (!job.started_at) return "—";
  const startMs = Date.parse(job.started_at);
  if (job.ended_at) return formatElapsedMs(Date.parse(job.ended_at) - startMs);
  return job.status === "in_progress" ? `running for ${formatElapsedMs(nowMs - startMs)}` : "—";
}
