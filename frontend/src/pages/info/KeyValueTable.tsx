import { useMemo } from "react";
import { type DataColumn, Table } from "../../components/DataTable";
import { displayValue } from "./summary";

type Entry = { key: string; value: string };

const COLUMNS: DataColumn<Entry>[] = [
  { key: "key", label: "Name" },
  { key: "value", label: "Value", className: "mono" },
];

/**
 * A JSON object as a two-column table, by name at first: the database does not keep the order
 * in which the keys were sent.
 */
export function KeyValueTable({
  label,
  value,
  empty,
}: {
  label: string;
  value: unknown;
  empty: string;
}) {
  const entries = useMemo(
    () =>
      typeof value === "object" && value !== null && !Array.isArray(value)
        ? Object.entries(value).map(([key, item]) => ({ key, value: displayValue(item) }))
        : [],
    [value],
  );
  if (entries.length === 0) return <p className="muted">{empty}</p>;
  return (
    <Table
      label={label}
      className="table-compact"
      rows={entries}
      columns={COLUMNS}
      rowKey={(entry) => entry.key}
      defaultSort={{ key: "key", desc: false }}
    />
  );
}
