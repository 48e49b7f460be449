import { toCsv } from "../../lib/csv";
import { type AnyColumn, type DataRow, valueOf } from "./columns";

/** The rows as the table shows them (filtered, in its order), each column's raw value under
 * its CSV header: numbers at full precision, not as their cells print them. */
export function tableCsv(columns: readonly AnyColumn[], rows: readonly DataRow[]): string {
  const header = columns.map((column) => column.csv ?? column.key);
  return toCsv(
    header,
    rows.map((row) => columns.map((column) => valueOf(column, row))),
  );
}

/** Hands ``text`` to the browser as a download named ``fileName``. */
export function downloadCsv(fileName: string, text: string) {
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  const link = document.createElement("a");
  link.href = url;
  link.download = fileName;
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}
