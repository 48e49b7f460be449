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
import { useMemo, useState } from "react";
import { type AnyColumn, type DataRow, type TableProps, valueOf } from "./columns";

const features = tableFeatures({
  rowSortingFeature,
  columnFilteringFeature,
  filteredRowModel: createFilteredRowModel(),
  sortedRowModel: createSortedRowModel(),
});
const helper = createColumnHelper<typeof features, DataRow>();

export type TableRow = Row<typeof features, DataRow>;

export interface SortedRows {
  table: ReactTable<typeof features, DataRow>;
  props: TableProps<DataRow>;
  columns: AnyColumn[];
  byKey: Map<string, AnyColumn>;
  /** Columns with a number in some row: they sort as numbers and align right. */
  numeric: Set<string>;
}

/**
 * The table's rows in the order shown: filtered by ``filter`` ([column, text], any case) and
 * sorted by the clicked column (again: the other way), or as the server sorted them when the
 * page passes ``sort``. A column with numbers sorts numerically, largest first on the first
 * click, other columns A to Z ignoring case; missing values go last either way.
 */
export function useSortedRows<R>(
  typed: TableProps<R>,
  filter: [string, string] | null,
): SortedRows {
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
