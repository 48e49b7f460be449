/** The range selection's totals: per track and name, computed by the server over every event
 * in the range (not only what the screen loaded). A row click outlines its events. */
import { useMemo } from "react";
import { useJobCapture } from "../../api/capture";
import type { RangeTotals } from "../../api/timeline";
import { type DataColumn, type DataRow, DataTable } from "../../components/DataTable";
import { ErrorAlert, Loading } from "../../components/Feedback";
import { formatOffset } from "./format";
import { withoutSharedPrefix } from "./tree";

const ms = (value: number) => (value / 1e6).toLocaleString("en-US", { maximumFractionDigits: 3 });

const COLUMNS: DataColumn[] = [
  { key: "name", label: "Name", code: true },
  { key: "track", label: "Track" },
  { key: "count", label: "Count" },
  { key: "total_ns", label: "Total (ms)", format: ms },
  { key: "self_ns", label: "Self (ms)", format: ms },
  { key: "avg_ns", label: "Average (ms)", format: ms },
  { key: "min_ns", label: "Min (ms)", format: ms },
  { key: "max_ns", label: "Max (ms)", format: ms },
  { key: "pct_of_range", label: "% of range", format: (v) => v.toFixed(2) },
];

export type PickedRow = { track: string; name: string };

export function RangePane(props: {
  jobId: number;
  startNs: number;
  endNs: number;
  totals: { data?: RangeTotals; error: unknown; isLoading: boolean };
  trackLabel: (id: string) => string;
  picked: PickedRow | null;
  onPick: (row: PickedRow | null) => void;
  onClear: () => void;
  highlighted: { count: number; shown: number } | null;
}) {
  const { totals, trackLabel, picked, onPick } = props;
  const captured = useJobCapture(props.jobId).data?.captured_steps ?? null;
  const rows: DataRow[] = useMemo(() => {
    const found = totals.data?.rows ?? [];
    const paths = withoutSharedPrefix(found.map((r) => trackLabel(r.track)));
    return found.map((r, i) => ({ ...r, trackId: r.track, track: paths[i]! }));
  }, [totals.data, trackLabel]);
  return (
    <section className="card tl-range" aria-label="Range selection" data-testid="range-pane">
      <div className="card-header">
        <h3>
          Range {formatOffset(props.startNs)} – {formatOffset(props.endNs)} (
          {ms(props.endNs - props.startNs)} ms, {totals.data?.tracks.length ?? "…"} lanes)
        </h3>
        <button type="button" className="btn btn-small" onClick={props.onClear}>
          Clear range
        </button>
      </div>
      <p className="muted">
        Durations count the part of each event inside the range; self time (CPU threads) leaves out
        the events nested inside. Totals are over every event in the range, whatever the job&apos;s
        window; % of range is of the range&apos;s whole length.{" "}
        {captured && (
          <span data-testid="range-captured">
            Kineto recorded events only in the {captured}: where the range holds other steps, it has
            no GPU or operator events there, so its shares are lower than the Dashboard&apos;s
            shares of captured time.{" "}
          </span>
        )}
        Click a row to outline its events.
        {props.highlighted &&
          ` Outlined: ${props.highlighted.shown.toLocaleString("en-US")} of ${props.highlighted.count.toLocaleString("en-US")} events.`}
      </p>
      {totals.error ? <ErrorAlert error={totals.error} /> : null}
      {totals.isLoading && <Loading what="the range's totals" />}
      {totals.data && rows.length === 0 && (
        <p className="muted">No events in this range on these tracks.</p>
      )}
      <DataTable
        title="Events in the range"
        rows={rows}
        columns={COLUMNS}
        filterKey="name"
        defaultSort={{ key: "total_ns", desc: true }}
        fileName="timeline-range"
        wide
        onRowClick={(row) => {
          const next = { track: String(row.trackId), name: String(row.name) };
          onPick(picked && picked.track === next.track && picked.name === next.name ? null : next);
        }}
        isActive={(row) =>
          picked !== null && row.trackId === picked.track && row.name === picked.name
        }
      />
    </section>
  );
}
