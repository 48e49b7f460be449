import { type ReactNode, useId, useState } from "react";
import "./DataTable.css";
import { WindowNote } from "./JobWindow";
import { BodyRow, TableElement } from "./dataTable/TableMarkup";
import { VirtualRows } from "./dataTable/VirtualRows";
import type { AnyColumn, DataRow, TableProps } from "./dataTable/columns";
import { downloadCsv, tableCsv } from "./dataTable/exportCsv";
import { useSortedRows } from "./dataTable/useSortedRows";

export type { DataColumn, DataRow, TableProps, TableSort } from "./dataTable/columns";

export interface DataTableProps<R> extends Omit<TableProps<R>, "label" | "sort" | "onSort"> {
  /** The card's heading and the table's accessible name. */
  title: string;
  /** The column a text box filters by (case-insensitive substring); none: no text box. */
  filterKey?: string;
  /** Rows the whole table has, when the server sent only the busiest `rows`. */
  total?: number;
  /** The CSV file's name, without ".csv". */
  fileName: string;
  /** Span the whole row of the page's grid (tables with long names). */
  wide?: boolean;
  /** Controls shown above the table (a grouping toggle). */
  children?: ReactNode;
}

/** A card with a table of every row: sorted by clicking a header (again: the other way),
 * filtered by name, exported as CSV exactly as shown, and virtualised so that thousands of
 * rows scroll smoothly. */
export function DataTable<R extends object = DataRow>({
  title,
  filterKey,
  total,
  fileName,
  wide = false,
  children,
  ...props
}: DataTableProps<R>) {
  const [filter, setFilter] = useState("");
  const model = useSortedRows(
    { ...props, label: title },
    filterKey && filter ? [filterKey, filter] : null,
  );
  const filterId = useId();
  if (props.rows.length === 0) return null;
  const shown = model.table.getRowModel().rows;
  const rows = props.rows.length;

  const exportCsv = () =>
    downloadCsv(
      `${fileName}.csv`,
      tableCsv(
        props.columns as AnyColumn[],
        shown.map((row) => row.original),
      ),
    );
  const hidden = total !== undefined && total > rows;
  return (
    <section className={wide ? "card wide" : "card"} aria-label={title}>
      <div className="window-heading">
        <h3>{title}</h3>
        <WindowNote />
      </div>
      <div className="data-table-toolbar">
        {children}
        {filterKey && (
          <>
            <label className="visually-hidden" htmlFor={filterId}>
              Filter {title} by name
            </label>
            <input
              id={filterId}
              type="search"
              className="data-table-filter"
              placeholder="Filter by name…"
              value={filter}
              onChange={(event) => setFilter(event.target.value)}
            />
          </>
        )}
        <span className="muted data-table-count" data-testid="row-count">
          {shown.length === rows
            ? count(rows)
            : `${shown.length.toLocaleString("en-US")} of ${count(rows)}`}
        </span>
        <button type="button" className="btn btn-small" onClick={exportCsv}>
          Export CSV
        </button>
      </div>
      {hidden && (
        <p className="muted data-table-note">
          The server sent the {rows.toLocaleString("en-US")} rows with the most time of{" "}
          {total.toLocaleString("en-US")}; sorting, filtering and the CSV cover those.
        </p>
      )}
      <VirtualRows model={model} />
    </section>
  );
}

/** A table of data inside a page's own card: every row drawn, sorted as ``DataTable`` sorts. */
export function Table<R extends object = DataRow>(props: TableProps<R>) {
  const model = useSortedRows(props, null);
  const rows = model.table.getRowModel().rows;
  return (
    <div className="table-wrap">
      <TableElement model={model} rowCount={rows.length}>
        {rows.map((row) => (
          <BodyRow key={row.id} model={model} row={row} />
        ))}
      </TableElement>
    </div>
  );
}

function count(rows: number): string {
  return `${rows.toLocaleString("en-US")} ${rows === 1 ? "row" : "rows"}`;
}
