import { useMemo, useState } from "react";
import { useSearchParams } from "react-router";
import { type Memory, type MemoryDevice, useMemory, useMemoryEvents } from "../../api/memory";
import type { TrainingJob } from "../../api/types";
import { Chart } from "../../charts/Chart";
import { type DataColumn, DataTable } from "../../components/DataTable";
import { ErrorAlert, Loading } from "../../components/Feedback";
import { LoadedJobGate } from "../../components/LoadedJobGate";
import { Pagination } from "../../components/Pagination";
import { Panel } from "../../components/Panel";
import { formatBytes, formatCount } from "../../lib/format";
import { formatSignedBytes, memoryChartOption, secondsSince } from "./memoryView";
import "./memory.css";

const EVENTS_PER_PAGE = 100;

export function MemoryPage() {
  return (
    <>
      <h1>Memory</h1>
      <LoadedJobGate page="memory view">{(job) => <JobMemory job={job} />}</LoadedJobGate>
    </>
  );
}

function JobMemory({ job }: { job: TrainingJob }) {
  const [params, setParams] = useSearchParams();
  const partText = params.get("part");
  const part = partText && /^\d+$/.test(partText) ? Number(partText) : null;
  const memory = useMemory(job.id, part);
  return (
    <>
      <h2 className="job-heading">{job.name}</h2>
      {memory.isError && <ErrorAlert error={memory.error} />}
      {memory.isPending && <Loading what="the memory view" />}
      {memory.data && (
        <MemoryPanels
          data={memory.data}
          jobId={job.id}
          choosePart={(p) => setParams({ part: String(p) }, { replace: true })}
        />
      )}
    </>
  );
}

function MemoryPanels({
  data,
  jobId,
  choosePart,
}: {
  data: Memory;
  jobId: number;
  choosePart: (part: number) => void;
}) {
  const parts = useMemo(
    () => [...new Map(data.peaks.map((p) => [p.part, p])).values()],
    [data.peaks],
  );
  if (data.peaks.length === 0 && data.nvml.length === 0) {
    return (
      <Panel
        title="Memory over time"
        size="wide"
        emptyReason="no memory events in this profile: record it with torch.profiler.profile(profile_memory=True), or run the collector for NVML memory samples"
      >
        {null}
      </Panel>
    );
  }
  const origin =
    data.start_ns ?? data.devices[0]?.curve[0]?.[0] ?? data.nvml[0]?.points[0]?.[0] ?? 0;
  return (
    <div className="memory-grid">
      {parts.length > 1 && (
        <label className="memory-part">
          Part{" "}
          <select
            aria-label="Part"
            value={data.part ?? ""}
            onChange={(e) => choosePart(Number(e.target.value))}
          >
            {parts.map((p) => (
              <option
                key={p.part}
                value={p.part}
              >{`${p.node} rank ${p.rank} (part ${p.part}), peak ${formatBytes(p.allocated)}`}</option>
            ))}
          </select>
        </label>
      )}
      {data.devices.map((device) => (
        <DevicePanels
          key={device.device}
          device={device}
          origin={origin}
          jobId={jobId}
          part={data.part!}
          nvml={
            device.device_type === 1 ? data.nvml.find((s) => s.device === device.device) : undefined
          }
        />
      ))}
      {data.devices.length === 0 &&
        data.nvml.map((series) => (
          <Panel
            key={series.device}
            title={`${series.device} memory used (NVML)`}
            size="wide"
            note="Sampled by the collector with NVML: everything the GPU holds, the caching allocator's reserve included."
          >
            <Chart
              height={260}
              label={`${series.device} memory used over time`}
              option={memoryChartOption(null, origin, series)}
            />
          </Panel>
        ))}
    </div>
  );
}

const ALLOCATOR_COLUMNS: DataColumn[] = [
  { key: "name", label: "Operator", code: true },
  { key: "allocations", label: "Allocations" },
  { key: "allocated_bytes", label: "Allocated", csv: "allocated_bytes", format: formatBytes },
  { key: "held_count", label: "Held at peak" },
  { key: "held_bytes", label: "Held at peak (bytes)", csv: "held_bytes", format: formatBytes },
];

function DevicePanels({
  device,
  origin,
  nvml,
  jobId,
  part,
}: {
  device: MemoryDevice;
  origin: number;
  nvml: Memory["nvml"][number] | undefined;
  jobId: number;
  part: number;
}) {
  const option = useMemo(() => memoryChartOption(device, origin, nvml), [device, origin, nvml]);
  return (
    <>
      <Panel
        title={`${device.device} memory over time`}
        size="wide"
        note={
          device.totals_recorded ? (
            <>
              Allocated and reserved bytes after each of the allocator's{" "}
              {formatCount(device.events)} events (profile_memory), each time bucket drawn at its
              highest. Drag the slider to zoom.
            </>
          ) : (
            <>
              This trace's {formatCount(device.events)} memory events carry each allocation's size
              but not the allocator's totals (PyTorch 1.9): allocated is the running sum of those
              sizes from the first event (memory held before profiling began is not counted), each
              time bucket drawn at its highest. Reserved memory was not recorded. Drag the slider to
              zoom.
            </>
          )
        }
      >
        <Chart
          option={option}
          height={300}
          label={`${device.device} allocated and reserved memory over time`}
        />
        <div className="memory-peak" aria-label="Peak">
          <p>
            <strong>Peak: {formatBytes(device.allocated)}</strong> allocated (
            {device.reserved === null
              ? "reserved not recorded"
              : `${formatBytes(device.reserved)} reserved`}
            ) at {secondsSince(origin, device.time_ns).toFixed(4)} s after the trace's start.
          </p>
          <p>Operators running at the peak (outermost first):</p>
          {device.running.length ? (
            <ol className="memory-stack">
              {device.running.map((name, i) => (
                <li key={i}>
                  <code>{name}</code>
                </li>
              ))}
            </ol>
          ) : (
            <p className="muted">none: the peak allocation was made outside every operator</p>
          )}
        </div>
      </Panel>
      <DataTable
        title={`Top allocating operators (${device.device})`}
        rows={device.allocators}
        wide
        columns={ALLOCATOR_COLUMNS}
        filterKey="name"
        defaultSort={{ key: "allocated_bytes", desc: true }}
        fileName={`memory-allocators-${device.device}`}
      />
      <EventsTable jobId={jobId} part={part} device={device.device} origin={origin} />
    </>
  );
}

function EventsTable({
  jobId,
  part,
  device,
  origin,
}: {
  jobId: number;
  part: number;
  device: string;
  origin: number;
}) {
  const [minKb, setMinKb] = useState("");
  const [fromS, setFromS] = useState("");
  const [toS, setToS] = useState("");
  const [page, setPage] = useState(1);
  const number = (text: string) =>
    text.trim() === "" || Number.isNaN(Number(text)) ? undefined : Number(text);
  const atNs = (seconds: number | undefined) =>
    seconds === undefined ? undefined : Math.round(origin + seconds * 1e9);
  const query = {
    part,
    device,
    offset: (page - 1) * EVENTS_PER_PAGE,
    limit: EVENTS_PER_PAGE,
    min_bytes: number(minKb) === undefined ? undefined : Math.round(number(minKb)! * 1000),
    start_ns: atNs(number(fromS)),
    end_ns: atNs(number(toS)),
  };
  const events = useMemoryEvents(jobId, query);
  const rows = useMemo(
    () =>
      (events.data?.results ?? []).map((e) => ({ ...e, time_s: secondsSince(origin, e.time_ns) })),
    [events.data, origin],
  );
  const reset = (set: (v: string) => void) => (e: React.ChangeEvent<HTMLInputElement>) => {
    set(e.target.value);
    setPage(1);
  };
  return (
    <DataTable
      title={`Memory events (${device})`}
      rows={rows}
      wide
      columns={EVENT_COLUMNS}
      fileName={`memory-events-${device}`}
    >
      <div className="memory-filters">
        <label>
          At least{" "}
          <input
            type="number"
            min={0}
            value={minKb}
            onChange={reset(setMinKb)}
            aria-label="Minimum size (kB)"
          />{" "}
          kB
        </label>
        <label>
          From{" "}
          <input type="number" value={fromS} onChange={reset(setFromS)} aria-label="From (s)" /> s
        </label>
        <label>
          to <input type="number" value={toS} onChange={reset(setToS)} aria-label="To (s)" /> s
        </label>
        {events.isError && <ErrorAlert error={events.error} />}
        <span className="muted">{formatCount(events.data?.count ?? 0)} events</span>
      </div>
      <Pagination
        page={page}
        pageSize={EVENTS_PER_PAGE}
        count={events.data?.count ?? 0}
        onPage={setPage}
      />
    </DataTable>
  );
}

const EVENT_COLUMNS: DataColumn[] = [
  { key: "time_s", label: "Time from start (s)", csv: "time_s", format: (s) => s.toFixed(6) },
  { key: "bytes", label: "Size", format: formatSignedBytes },
  // A running sum of sizes (traces without totals) dips below zero after freeing older memory.
  {
    key: "total_allocated",
    label: "Allocated after",
    format: (v) => (v < 0 ? formatSignedBytes(v) : formatBytes(v)),
  },
  { key: "total_reserved", label: "Reserved after", format: formatBytes },
  { key: "operator", label: "Operator", code: true },
  { key: "thread", label: "Thread" },
];
