import { WindowNote } from "./JobWindow";
import {
  type ColumnFiltersState,
  type ReactTable,
  type SortingState,
  columnFilteringFeature,
  createColumnHelper,
  createFilteredRowModel,
  createSortedRowModel,
  filterFn_includesString,
  rowSortingFeature,
  sortFn_basic,
  sortFn_text,
  tableFeatures,
  useTable,
} from "@tanstack/react-table";
import { useVirtualizer } from "@tanstack/react-virtual";
import { type ReactNode, useId, useMemo, useRef, useState } from "react";
import { toCsv } from "../lib/csv";
import "./DataTable.css";

export type DataRow = Record<string, unknown>;

export interface DataColumn {
  /** The row's field. */
  key: string;
  label: string;
  /** The CSV header; the key unless the key lacks its unit ("mean" in GB/s: "mean_gbps"). */
  csv?: string;
  /** A number's cell text; integers with thousands separators by default. */
  format?: (value: number) => string;
  /** Monospace and as wide as the table allows: kernel and operator names. */
  code?: boolean;
  /** Long text that wraps (input shapes) instead of being cut with an ellipsis. */
  wrap?: boolean;
}

export interface DataTableProps {
  /** The card's heading and the table's accessible name. */
  title: string;
  rows: DataRow[];
  /** Keep stable (module constant or memo): a new array rebuilds the table's models. */
  columns: DataColumn[];
  /** The column a text box filters by (case-insensitive substring); none: no text box. */
  filterKey?: string;
  defaultSort?: { key: string; desc: boolean };
  /** Rows the whole table has, when the server sent only the busiest `rows`. */
  total?: number;
  /** The CSV file's name, without ".csv". */
  fileName: string;
  /** Span the whole row of the page's grid (tables with long names). */
  wide?: boolean;
  /** Controls shown above the table (a grouping toggle). */
  children?: ReactNode;
  /** Clicking (or Enter on) a row calls this; ``isActive`` marks the picked row. */
  onRowClick?: (row: DataRow) => void;
  isActive?: (row: DataRow) => boolean;
}

const features = tableFeatures({
  rowSortingFeature,
  columnFilteringFeature,
  filteredRowModel: createFilteredRowModel(),
  sortedRowModel: createSortedRowModel(),
});
const helper = createColumnHelper<typeof features, DataRow>();

const ROW_HEIGHT_PX = 33;

/** A card with a table of every row: sorted by clicking a header (again: the other way),
 * filtered by name, exported as CSV exactly as shown, and virtualised so that thousands of
 * rows scroll smoothly. */
export function DataTable({
  title,
  rows,
  columns,
  filterKey,
  defaultSort,
  total,
  fileName,
  wide = false,
  children,
  onRowClick,
  isActive,
}: DataTableProps) {
  const [sorting, setSorting] = useState<SortingState>(
    defaultSort ? [{ id: defaultSort.key, desc: defaultSort.desc }] : [],
  );
  const [filter, setFilter] = useState("");
  const columnFilters = useMemo<ColumnFiltersState>(
    () => (filterKey && filter ? [{ id: filterKey, value: filter }] : []),
    [filterKey, filter],
  );
  const numeric = useMemo(
    () =>
      new Set(
        columns.filter((c) => rows.some((row) => typeof row[c.key] === "number")).map((c) => c.key),
      ),
    [columns, rows],
  );
  const columnDefs = useMemo(() => tableColumns(columns, numeric), [columns, numeric]);
  const table = useTable({
    features,
    columns: columnDefs,
    data: rows,
    state: { sorting, columnFilters },
    onSortingChange: setSorting,
    enableSortingRemoval: false,
  });
  const shown = table.getRowModel().rows;
  const filterId = useId();
  if (rows.length === 0) return null;

  const exportCsv = () => {
    const header = columns.map((column) => column.csv ?? column.key);
    const lines = shown.map((row) => columns.map((column) => row.original[column.key]));
    download(`${fileName}.csv`, toCsv(header, lines));
  };
  const hidden = total !== undefined && total > rows.length;
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
          {shown.length === rows.length
            ? count(rows.length)
            : `${shown.length.toLocaleString("en-US")} of ${count(rows.length)}`}
        </span>
        <button type="button" className="btn btn-small" onClick={exportCsv}>
          Export CSV
        </button>
      </div>
      {hidden && (
        <p className="muted data-table-note">
          The server sent the {rows.length.toLocaleString("en-US")} rows with the most time of{" "}
          {total.toLocaleString("en-US")}; sorting, filtering and the CSV cover those.
        </p>
      )}
      <VirtualRows
        table={table}
        columns={columns}
        numeric={numeric}
        title={title}
        onRowClick={onRowClick}
        isActive={isActive}
      />
    </section>
  );
}

function VirtualRows({
  table,
  columns,
  numeric,
  title,
  onRowClick,
  isActive,
}: {
  table: ReactTable<typeof features, DataRow>;
  columns: DataColumn[];
  numeric: Set<string>;
  title: string;
  onRowClick?: (row: DataRow) => void;
  isActive?: (row: DataRow) => boolean;
}) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const rows = table.getRowModel().rows;
  // The app does not use React Compiler, so nothing memoizes around the virtualizer's methods.
  // eslint-disable-next-line react-hooks/incompatible-library
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT_PX,
    getItemKey: (index) => rows[index]!.id,
    overscan: 12,
  });
  const items = virtualizer.getVirtualItems();
  const padTop = items[0]?.start ?? 0;
  const padBottom = virtualizer.getTotalSize() - (items.at(-1)?.end ?? 0);
  const byKey = new Map(columns.map((column) => [column.key, column]));
  return (
    <div className="data-table-scroll" ref={scrollRef}>
      <table className="table data-table" aria-label={title} aria-rowcount={rows.length + 1}>
        <thead>
          {table.getHeaderGroups().map((group) => (
            <tr key={group.id}>
              {group.headers.map((header) => {
                const column = byKey.get(header.column.id)!;
                const sorted = header.column.getIsSorted();
                return (
                  <th
                    key={header.id}
                    className={columnClass(column, numeric)}
                    aria-sort={
                      sorted === "asc" ? "ascending" : sorted === "desc" ? "descending" : undefined
                    }
                  >
                    <button
                      type="button"
                      className="data-table-sort"
                      onClick={header.column.getToggleSortingHandler()}
                      title={`Sort by ${column.label}`}
                    >
                      {column.label}
                      <span
                        aria-hidden="true"
                        className={sorted ? "sort-mark" : "sort-mark sort-mark-idle"}
                      >
                        {sorted === "asc" ? "▲" : sorted === "desc" ? "▼" : "↕"}
                      </span>
                    </button>
                  </th>
                );
              })}
            </tr>
          ))}
        </thead>
        <tbody>
          {padTop > 0 && <tr aria-hidden="true" style={{ height: padTop }} />}
          {items.map((item) => {
            const row = rows[item.index]!;
            return (
              <tr
                key={row.id}
                data-index={item.index}
                ref={virtualizer.measureElement}
                aria-rowindex={item.index + 2}
                className={
                  [
                    onRowClick ? "data-table-clickable" : "",
                    isActive?.(row.original) ? "data-table-active" : "",
                  ]
                    .join(" ")
                    .trim() || undefined
                }
                tabIndex={onRowClick ? 0 : undefined}
                aria-selected={onRowClick ? Boolean(isActive?.(row.original)) : undefined}
                onClick={onRowClick ? () => onRowClick(row.original) : undefined}
                onKeyDown={
                  onRowClick
                    ? (event) => {
                        if (event.key === "Enter") onRowClick(row.original);
                      }
                    : undefined
                }
              >
                {row.getAllCells().map((cell) => {
                  const column = byKey.get(cell.column.id)!;
                  const value = row.original[column.key];
                  return (
                    <td
                      key={cell.id}
                      className={columnClass(column, numeric)}
                      title={String(value ?? "")}
                    >
                      {cellText(value, column.format)}
                    </td>
                  );
                })}
              </tr>
            );
          })}
          {padBottom > 0 && <tr aria-hidden="true" style={{ height: padBottom }} />}
        </tbody>
      </table>
    </div>
  );
}

function tableColumns(columns: DataColumn[], numeric: Set<string>) {
  return helper.columns(
    columns.map((column) =>
      helper.accessor((row) => row[column.key] ?? undefined, {
        id: column.key,
        header: column.label,
        sortFn: numeric.has(column.key) ? sortFn_basic : sortFn_text,
        sortUndefined: "last",
        filterFn: filterFn_includesString,
      }),
    ),
  );
}

function columnClass(column: DataColumn, numeric: Set<string>): string {
  return [numeric.has(column.key) && "num", column.code && "code", column.wrap && "wrap"]
    .filter(Boolean)
    .join(" ");
}

function count(rows: number): string {
  return `${rows.toLocaleString("en-US")} ${rows === 1 ? "row" : "rows"}`;
}

function cellText(value: unknown, format: DataColumn["format"]): string {
  if (value === null || value === undefined) return "–";
  if (typeof value !== "number") return String(value);
  return format ? format(value) : value.toLocaleString("en-US");
}

function download(fileName: string, text: string) {
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  const link = document.createElement("a");
  link.href = url;
  link.download = fileName;
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}
