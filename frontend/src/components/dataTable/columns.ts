/** The columns and rows a page gives a table of data, and what every such table shares. */
import type { ReactNode } from "react";

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

// The table works on rows of any shape through the columns' accessors; this is its one cast.
export type AnyColumn = DataColumn<DataRow>;

/** What a column sorts, filters and exports a row by. */
export function valueOf(column: AnyColumn, row: DataRow): unknown {
  return column.value ? column.value(row) : row[column.key];
}
