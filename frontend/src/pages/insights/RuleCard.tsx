import { useMemo } from "react";
import { Link } from "react-router";
import type { RuleResult, RuleStatus } from "../../api/insights";
import { type DataColumn, type DataRow, Table } from "../../components/DataTable";
import { fieldLabel, formatField, rawFieldText } from "./fieldText";

const STATUS_TEXT: Record<RuleStatus, string> = {
  issue_found: "Issue found",
  no_issue: "No issue",
  not_evaluated: "Not evaluated",
};

export function RuleStatusBadge({ status }: { status: string }) {
  const text = STATUS_TEXT[status as RuleStatus] ?? status;
  return <span className={`badge rule-${status}`}>{text}</span>;
}

/** One rule's verdict: how often it was checked and fired, its evidence and what to do. */
export function RuleCard({ rule }: { rule: RuleResult }) {
  return (
    <section className="card rule-card" aria-label={rule.rule} id={`rule-${rule.rule}`}>
      <div className="rule-heading">
        <h3>{rule.rule}</h3>
        <RuleStatusBadge status={rule.status} />
        <span className="muted">
          evaluated {rule.evaluated}× · triggered {rule.trigger_count}×
        </span>
      </div>
      <p className="muted rule-description">{rule.description}</p>
      {rule.not_evaluated_reason ? (
        <p className="rule-reason">{rule.not_evaluated_reason}</p>
      ) : (
        <>
          <Evidence evidence={rule.evidence} />
          <PerRank evidence={rule.evidence} />
          {rule.caused_by && (
            <p className="rule-cause">
              <strong>Caused by: </strong>
              <a href={`#rule-${rule.caused_by}`}>{rule.caused_by}</a>
            </p>
          )}
          <p className="rule-recommendation">
            <strong>Recommendation: </strong>
            {rule.recommendation}
          </p>
        </>
      )}
      {rule.time_ranges.length > 0 && (
        <div className="rule-ranges">
          <strong>Where: </strong>
          {rule.time_ranges.slice(0, 10).map((range) => (
            <Link
              key={`${range.start_ns}-${range.node}-${range.device}-${range.event ?? ""}`}
              to={range.timeline_url}
              className="chip"
            >
              {where(range)} · {formatRange(range.start_ns, range.end_ns)}
            </Link>
          ))}
          {rule.time_ranges.length > 10 && (
            <span className="muted"> and {rule.time_ranges.length - 10} more</span>
          )}
        </div>
      )}
    </section>
  );
}

type TimeRange = RuleResult["time_ranges"][number];

function where(range: TimeRange): string {
  if (range.rank !== undefined && range.rank >= 0) return `rank ${range.rank}`;
  return `${range.node}${range.device >= 0 ? ` GPU ${range.device}` : ""}`;
}

function formatRange(startNs: number, endNs: number): string {
  const seconds = (endNs - startNs) / 1e9;
  return seconds < 1 ? `${(seconds * 1e3).toFixed(2)} ms` : `${seconds.toFixed(2)} s`;
}

/** The evidence's scalar values as a list; nested tables stay in the downloadable report. */
function Evidence({ evidence }: { evidence: Record<string, unknown> }) {
  const entries = Object.entries(evidence).filter(
    ([, value]) => value !== null && typeof value !== "object",
  );
  if (entries.length === 0) return null;
  return (
    <dl className="rule-evidence">
      {entries.map(([key, value]) => (
        <div key={key} title={rawFieldText(key, value)}>
          <dt>{fieldLabel(key)}</dt>
          <dd>{typeof value === "number" ? formatField(key, value) : String(value)}</dd>
        </div>
      ))}
    </dl>
  );
}

/** A finding's per-rank figures (``evidence.ranks``) as a table: one row per rank. */
function PerRank({ evidence }: { evidence: Record<string, unknown> }) {
  const { rows, columns } = useMemo(() => perRankTable(evidence.ranks), [evidence.ranks]);
  if (rows.length === 0 || columns.length === 1) return null;
  return (
    <Table
      label="Per rank"
      className="rule-ranks"
      rows={rows}
      columns={columns}
      rowKey={(row) => String(row.rank)}
    />
  );
}

function perRankTable(ranks: unknown): { rows: DataRow[]; columns: DataColumn[] } {
  const entries =
    ranks && typeof ranks === "object" ? Object.entries(ranks as Record<string, DataRow>) : [];
  const rows = entries.map(([rank, values]): DataRow => ({
    ...values,
    rank: /^\d+$/.test(rank) ? Number(rank) : rank,
  }));
  const keys = [
    ...new Set(rows.flatMap((row) => Object.keys(row).filter((k) => typeof row[k] === "number"))),
  ].filter((key) => key !== "rank");
  const columns: DataColumn[] = [
    { key: "rank", label: "Rank" },
    ...keys.map((key): DataColumn => ({
      key,
      label: fieldLabel(key),
      format: (value) => formatField(key, value),
      cellTitle: (row) => (row[key] == null ? undefined : rawFieldText(key, row[key])),
    })),
  ];
  return { rows, columns };
}
