import { useMemo, useState } from "react";
import type { EventDetails, TimelineEvent } from "../../api/timeline";
import { type DataColumn, Table } from "../../components/DataTable";
import { ErrorAlert, Loading } from "../../components/Feedback";
import { formatDuration } from "../../lib/format";
import type { ViewportData } from "../../timeline/model";
import { formatDims, formatOffset, offsetOf } from "./format";

export type Connection = {
  part: number;
  launch: number;
  run: number;
  runStartNs: number;
  runDurNs: number;
  launchStartNs: number;
};

type Props = {
  originNs: string;
  trackLabel: (id: string) => string;
  details: { data?: EventDetails; error: Error | null; isLoading: boolean };
  hasSelection: boolean;
  data: ViewportData | null;
  onPickConnection: (connection: Connection) => void;
};

const FIELDS: [keyof TimelineEvent, string, (e: TimelineEvent) => string][] = [
  ["kind", "Kind", (e) => e.kind],
  ["dur_ns", "Duration", (e) => formatDuration(e.dur_ns)],
  ["device", "Device", (e) => String(e.device)],
  ["stream", "Stream", (e) => String(e.stream)],
  ["correlation", "Correlation id", (e) => String(e.correlation)],
  ["external_id", "External id", (e) => String(e.external_id)],
  ["grid", "Grid", (e) => formatDims(e.grid)],
  ["block", "Block", (e) => formatDims(e.block)],
  ["registers", "Registers per thread", (e) => String(e.registers)],
  ["shared_mem", "Shared memory", (e) => `${e.shared_mem} B`],
  ["occupancy_pct", "Occupancy", (e) => `${e.occupancy_pct}%`],
  ["bytes", "Bytes", (e) => (e.bytes ?? 0).toLocaleString("en-US")],
  ["memcpy_kind", "Copy direction", (e) => String(e.memcpy_kind)],
  ["collective", "Collective", (e) => String(e.collective)],
  ["dtype", "Data type", (e) => String(e.dtype)],
  ["in_nelems", "Input elements", (e) => (e.in_nelems ?? 0).toLocaleString("en-US")],
  ["group_size", "Group size", (e) => String(e.group_size)],
  ["input_types", "Input types", (e) => String(e.input_types)],
  ["input_dims", "Input shapes", (e) => String(e.input_dims)],
];

function EventTable({
  title,
  event,
  originNs,
  trackLabel,
}: {
  title: string;
  event: TimelineEvent;
  originNs: string;
  trackLabel: (id: string) => string;
}) {
  const rows: [string, string][] = [
    ["Track", trackLabel(event.track)],
    ["Start", offsetOf(originNs, event.start_ns)],
    ...FIELDS.filter(([key]) => event[key] !== undefined && event[key] !== null).map(
      ([, label, show]): [string, string] => [label, show(event)],
    ),
  ];
  return (
    <section className="tl-event" aria-label={title}>
      <h4>{title}</h4>
      <p className="tl-event-name mono">{event.name}</p>
      <dl className="facts tl-facts">
        {rows.map(([label, value]) => (
          <div key={label}>
            <dt>{label}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}

function CurrentSelection({
  originNs,
  trackLabel,
  details,
  hasSelection,
}: Omit<Props, "data" | "onPickConnection">) {
  if (!hasSelection)
    return (
      <p className="muted">Click an event on the timeline to see everything recorded about it.</p>
    );
  if (details.error) return <ErrorAlert error={details.error} />;
  if (!details.data) return <Loading what="the selected event" />;
  const { event, launch, run } = details.data;
  const other = launch && launch.id !== event.id ? launch : run && run.id !== event.id ? run : null;
  return (
    <div className="tl-selection">
      <EventTable title="Selected" event={event} originNs={originNs} trackLabel={trackLabel} />
      {other && (
        <EventTable
          title={other === launch ? "Connected launch" : "Connected run"}
          event={other}
          originNs={originNs}
          trackLabel={trackLabel}
        />
      )}
      {details.data.launch_latency_ns !== undefined && (
        <section className="tl-event" aria-label="Latency">
          <h4>Launch → run</h4>
          <dl className="facts tl-facts">
            <div>
              <dt>Launch latency</dt>
              <dd>{formatDuration(details.data.launch_latency_ns)}</dd>
            </div>
            <div>
              <dt>Queued after the call</dt>
              <dd>{formatDuration(details.data.queue_ns ?? 0)}</dd>
            </div>
          </dl>
        </section>
      )}
    </div>
  );
}

/** A launch and its run in view, named. */
type ConnectionRow = Connection & { launchName: string; runName: string; latencyNs: number };

const CONNECTION_COLUMNS: DataColumn<ConnectionRow>[] = [
  { key: "launchName", label: "Launch", className: "mono tl-ellipsis" },
  { key: "launchStartNs", label: "Launched at", className: "nowrap", format: formatOffset },
  { key: "runName", label: "Run", className: "mono tl-ellipsis" },
  { key: "runDurNs", label: "Run time", className: "nowrap", format: formatDuration },
  { key: "latencyNs", label: "Latency", className: "nowrap", format: formatDuration },
];

function connectionRows(data: ViewportData): ConnectionRow[] {
  const flows = data.flows;
  const rows: ConnectionRow[] = [];
  for (let i = 0; i < flows.count; i++) {
    rows.push({
      part: flows.part[i]!,
      launch: flows.launch[i]!,
      run: flows.run[i]!,
      runStartNs: flows.runStart[i]!,
      runDurNs: flows.runDur[i]!,
      launchStartNs: flows.launchStart[i]!,
      launchName: data.names[flows.launchName[i]!]!,
      runName: data.names[flows.runName[i]!]!,
      latencyNs: flows.runStart[i]! - flows.launchStart[i]!,
    });
  }
  return rows;
}

function Connections({ data, onPickConnection }: Pick<Props, "data" | "onPickConnection">) {
  const rows = useMemo(() => (data ? connectionRows(data) : []), [data]);
  const flows = data?.flows;
  if (!flows || !flows.count)
    return <p className="muted">No kernel launch and run pairs in this view.</p>;
  return (
    <>
      <p className="muted">
        {flows.total > flows.count
          ? `The first ${flows.count.toLocaleString("en-US")} of ${flows.total.toLocaleString("en-US")} pairs in view.`
          : `${flows.count.toLocaleString("en-US")} pairs in view.`}{" "}
        Choose one to centre it.
      </p>
      <div className="tl-connections">
        <Table
          label="Launch and run pairs"
          rows={rows}
          columns={CONNECTION_COLUMNS}
          // Sorting the first pairs listed would pass for sorting them all.
          unsorted={flows.total > flows.count}
          rowKey={(row) => `${row.part}:${row.run}`}
          onRowClick={({ part, launch, run, runStartNs, runDurNs, launchStartNs }) =>
            onPickConnection({ part, launch, run, runStartNs, runDurNs, launchStartNs })
          }
        />
      </div>
    </>
  );
}

/** The pane under the timeline: the selected item with its launch or run, and the pairs in view. */
export function SelectionPane(props: Props) {
  const [tab, setTab] = useState<"selection" | "connections">("selection");
  return (
    <section className="card tl-bottom" aria-label="Selection details">
      <div className="tl-tabs" role="tablist">
        <button
          type="button"
          role="tab"
          aria-selected={tab === "selection"}
          onClick={() => setTab("selection")}
        >
          Current selection
        </button>
        <button
          type="button"
          role="tab"
          aria-selected={tab === "connections"}
          onClick={() => setTab("connections")}
        >
          Connections
        </button>
      </div>
      <div role="tabpanel" className="tl-tabpanel">
        {tab === "selection" ? (
          <CurrentSelection {...props} />
        ) : (
          <Connections data={props.data} onPickConnection={props.onPickConnection} />
        )}
      </div>
    </section>
  );
}
