import { WindowNote } from "./JobWindow";
import {
  type ColumnFiltersState,
  type ReactTable,
  type Row,
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

export interface DataColumn<R = DataRow> {
  /** The column's id, and the row's field unless ``value`` says otherwise. */
  key: string;
  label: string;
  /** What the column sorts, filters and exports by (the raw number, not its text). */
  value?: (row: R) => unknown;
  /** The cell's content where it is more than its value as text: a link, a badge, a control. */
  cell?: (row: R) => ReactNode;
  /** The CSV header; the key unless the key lacks its unit ("mean" in GB/s: "mean_gbps"). */
  csv?: string;
  /** A number's cell text; integers with thousands separators by default. */
  format?: (value: number) => string;
  /** Monospace and as wide as the table allows: kernel and operator names. */
  code?: boolean;
  /** Long text that wraps (input shapes) instead of being cut with an ellipsis. */
  wrap?: boolean;
  /** Controls and actions, which have no order. */
  unsortable?: boolean;
  /** A header for screen readers only (a column of buttons). */
  hiddenLabel?: boolean;
  /** Classes of the column's header and cells (a page's widths), and of one cell by its row. */
  className?: string;
  cellClass?: (row: R) => string | undefined;
  /** The cell's tooltip; a plain cell's is its whole value. */
  cellTitle?: (row: R) => string | undefined;
}

export type TableSort = { key: string; desc: boolean };

/** What every table of data shares: its rows and columns, how it sorts, what a row does. */
export interface TableProps<R> {
  /** The table's accessible name. */
  label: string;
  rows: readonly R[];
  /** Keep stable (module constant or memo): a new array rebuilds the table's models. */
  columns: DataColumn<R>[];
  /** Rows have no order of their own to offer: headers are plain text. */
  unsorted?: boolean;
  defaultSort?: TableSort;
  /** The server sorts: the table shows ``sort`` and asks ``onSort`` for a clicked column. */
  sort?: TableSort | null;
  onSort?: (key: string) => void;
  /** A row's React key (its id); its index in ``rows`` by default. */
  rowKey?: (row: R) => string | number;
  rowClass?: (row: R) => string | undefined;
  /** Extra attributes of a row's element (``data-testid``, ``data-metric``). */
  rowAttributes?: (row: R) => Record<`data-${string}`, string | undefined>;
  /** Clicking (or Enter on) a row calls this; ``isActive`` marks the picked row. */
  onRowClick?: (row: R) => void;
  isActive?: (row: R) => boolean;
  /** The page's classes for the table element (widths, density). */
  className?: string;
}

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

const features = tableFeatures({
  rowSortingFeature,
  columnFilteringFeature,
  filteredRowModel: createFilteredRowModel(),
  sortedRowModel: createSortedRowModel(),
});
const helper = createColumnHelper<typeof features, DataRow>();
type Model = ReactTable<typeof features, DataRow>;
// The table works on rows of any shape through the columns' accessors; this is its one cast.
type AnyColumn = DataColumn<DataRow>;

const ROW_HEIGHT_PX = 33;

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
  const model = useModel(
    { ...props, label: title },
    filterKey && filter ? [filterKey, filter] : null,
  );
  const filterId = useId();
  if (props.rows.length === 0) return null;
  const shown = model.table.getRowModel().rows;
  const rows = props.rows.length;

  const exportCsv = () => {
    const columns = props.columns as AnyColumn[];
    const header = columns.map((column) => column.csv ?? column.key);
    const lines = shown.map((row) => columns.map((column) => valueOf(column, row.original)));
    download(`${fileName}.csv`, toCsv(header, lines));
  };
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
  const model = useModel(props, null);
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

interface ModelState {
  table: Model;
  props: TableProps<DataRow>;
  columns: AnyColumn[];
  byKey: Map<string, AnyColumn>;
  numeric: Set<string>;
}

function useModel<R>(typed: TableProps<R>, filter: [string, string] | null): ModelState {
  const props = typed as unknown as TableProps<DataRow>;
  const { rows, columns, defaultSort, sort, rowKey } = props;
  const [ownSorting, setSorting] = useState<SortingState>(
    defaultSort ? [{ id: defaultSort.key, desc: defaultSort.desc }] : [],
  );
  const sorting = useMemo<SortingState>(
    () => (sort === undefined ? ownSorting : sort ? [{ id: sort.key, desc: sort.desc }] : []),
    [sort, ownSorting],
  );
  const [filterKey, filterText] = filter ?? ["", ""];
  const columnFilters = useMemo<ColumnFiltersState>(
    () => (filterKey ? [{ id: filterKey, value: filterText }] : []),
    [filterKey, filterText],
  );
  const numeric = useMemo(
    () =>
      new Set(
        columns
          .filter((c) => rows.some((row) => typeof valueOf(c, row) === "number"))
          .map((c) => c.key),
      ),
    [columns, rows],
  );
  const columnDefs = useMemo(() => tableColumns(columns, numeric), [columns, numeric]);
  const table = useTable({
    features,
    columns: columnDefs,
    data: rows as DataRow[],
    state: { sorting, columnFilters },
    onSortingChange: setSorting,
    manualSorting: sort !== undefined,
    enableSortingRemoval: false,
    getRowId: rowKey ? (row) => String(rowKey(row)) : undefined,
  });
  const byKey = useMemo(() => new Map(columns.map((column) => [column.key, column])), [columns]);
  return { table, props, columns, byKey, numeric };
}

function VirtualRows({ model }: { model: ModelState }) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const rows = model.table.getRowModel().rows;
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
  return (
    <div className="data-table-scroll" ref={scrollRef}>
      <TableElement model={model} rowCount={rows.length}>
        {padTop > 0 && <tr aria-hidden="true" style={{ height: padTop }} />}
        {items.map((item) => (
          <BodyRow
            key={rows[item.index]!.id}
            model={model}
            row={rows[item.index]!}
            index={item.index}
            measure={virtualizer.measureElement}
          />
        ))}
        {padBottom > 0 && <tr aria-hidden="true" style={{ height: padBottom }} />}
      </TableElement>
    </div>
  );
}

function TableElement({
  model,
  rowCount,
  children,
}: {
  model: ModelState;
  rowCount: number;
  children: ReactNode;
}) {
  const { table, props, byKey, numeric } = model;
  return (
    <table
      className={["table data-table", props.className].filter(Boolean).join(" ")}
      aria-label={props.label}
      aria-rowcount={rowCount + 1}
    >
      <thead>
        {table.getHeaderGroups().map((group) => (
          <tr key={group.id}>
            {group.headers.map((header) => {
              const column = byKey.get(header.column.id)!;
              const sortable = !props.unsorted && !column.unsortable;
              const sorted = header.column.getIsSorted();
              const className = columnClass(column, numeric);
              if (!sortable) {
                return (
                  <th key={header.id} className={className || undefined}>
                    {column.hiddenLabel ? (
                      <span className="visually-hidden">{column.label}</span>
                    ) : (
                      column.label
                    )}
                  </th>
                );
              }
              return (
                <th
                  key={header.id}
                  className={`${className} sortable`.trim()}
                  aria-sort={
                    sorted === "asc" ? "ascending" : sorted === "desc" ? "descending" : undefined
                  }
                >
                  <button
                    type="button"
                    className="data-table-sort"
                    onClick={
                      props.onSort
                        ? () => props.onSort!(column.key)
                        : header.column.getToggleSortingHandler()
                    }
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
      <tbody>{children}</tbody>
    </table>
  );
}

function BodyRow({
  model,
  row,
  index,
  measure,
}: {
  model: ModelState;
  row: Row<typeof features, DataRow>;
  /** Where the row sits among all, when only some are drawn. */
  index?: number;
  measure?: (element: HTMLTableRowElement | null) => void;
}) {
  const { props, byKey, numeric } = model;
  const { onRowClick, isActive, rowClass, rowAttributes } = props;
  const original = row.original;
  const active = isActive?.(original) ?? false;
  const className = [
    onRowClick && "data-table-clickable",
    active && "data-table-active",
    rowClass?.(original),
  ]
    .filter(Boolean)
    .join(" ");
  return (
    <tr
      {...rowAttributes?.(original)}
      data-index={index}
      ref={measure}
      aria-rowindex={index === undefined ? undefined : index + 2}
      className={className || undefined}
      tabIndex={onRowClick ? 0 : undefined}
      aria-selected={onRowClick ? active : undefined}
      onClick={onRowClick ? () => onRowClick(original) : undefined}
      onKeyDown={
        onRowClick
          ? (event) => {
              if (event.key === "Enter") onRowClick(original);
            }
          : undefined
      }
    >
      {row.getAllCells().map((cell) => {
        const column = byKey.get(cell.column.id)!;
        const value = valueOf(column, original);
        const className = [columnClass(column, numeric), column.cellClass?.(original)]
          .filter(Boolean)
          .join(" ");
        const title = column.cellTitle
          ? column.cellTitle(original)
          : column.cell
            ? undefined
            : String(value ?? "");
        return (
          <td key={cell.id} className={className || undefined} title={title}>
            {column.cell ? column.cell(original) : cellText(value, column.format)}
          </td>
        );
      })}
    </tr>
  );
}

function valueOf(column: AnyColumn, row: DataRow): unknown {
  return column.value ? column.value(row) : row[column.key];
}

function tableColumns(columns: AnyColumn[], numeric: Set<string>) {
  return helper.columns(
    columns.map((column) =>
      helper.accessor((row) => valueOf(column, row) ?? undefined, {
        id: column.key,
        header: column.label,
        sortFn: numeric.has(column.key) ? sortFn_basic : sortFn_text,
        sortUndefined: "last",
        filterFn: filterFn_includesString,
      }),
    ),
  );
}

function columnClass(column: AnyColumn, numeric: Set<string>): string {
  return [
    numeric.has(column.key) && "num",
    column.code && "code",
    column.wrap && "wrap",
    column.className,
  ]
    .filter(Boolean)
    .join(" ");
}

function count(rows: number): string {
  return `${rows.toLocaleString("en-US")} ${rows === 1 ? "row" : "rows"}`;
}

function cellText(value: unknown, format: AnyColumn["format"]): string {
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
