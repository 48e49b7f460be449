import type { ReactNode } from "react";
import { type AnyColumn, valueOf } from "./columns";
import type { SortedRows, TableRow } from "./useSortedRows";

/** The table element: its header of sort buttons and the body rows it is given. */
export function TableElement({
  model,
  rowCount,
  children,
}: {
  model: SortedRows;
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

/** One row of cells, as the columns say: a formatted value, or the column's own content. */
export function BodyRow({
  model,
  row,
  index,
  measure,
}: {
  model: SortedRows;
  row: TableRow;
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

function cellText(value: unknown, format: AnyColumn["format"]): string {
  if (value === null || value === undefined) return "–";
  if (typeof value !== "number") return String(value);
  return format ? format(value) : value.toLocaleString("en-US");
}
