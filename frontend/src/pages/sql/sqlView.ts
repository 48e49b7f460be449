import type { DataColumn, DataRow } from "../../components/DataTable";

/** The result as DataTable rows: keyed by position, since SQL allows repeated column names.
 * Text columns share the room the numbers leave (long kernel names are cut, titles hold them). */
export function resultTable(
  columns: string[],
  types: string[],
  rows: unknown[][],
): { columns: DataColumn[]; rows: DataRow[] } {
  return {
    columns: columns.map((name, at) => ({
      key: `c${at}`,
      label: name,
      csv: name,
      format: plainNumber,
      code: types[at] === "VARCHAR",
    })),
    rows: rows.map((row) =>
      Object.fromEntries(row.map((value, at) => [`c${at}`, cellValue(value)])),
    ),
  };
}

function cellValue(value: unknown): unknown {
  return value !== null && typeof value === "object" ? JSON.stringify(value) : value;
}

/** Integers as they are (ids, nanoseconds); other numbers to six significant digits. */
function plainNumber(value: number): string {
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(6)));
}

/** Ctrl+Enter or Cmd+Enter runs the query. */
export function isRunShortcut(event: { key: string; ctrlKey: boolean; metaKey: boolean }): boolean {
  return event.key === "Enter" && (event.ctrlKey || event.metaKey);
}
