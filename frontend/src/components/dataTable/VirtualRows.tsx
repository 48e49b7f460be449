import { useVirtualizer } from "@tanstack/react-virtual";
import { useRef } from "react";
import { BodyRow, TableElement } from "./TableMarkup";
import type { SortedRows } from "./useSortedRows";

/** A row's height until the browser has measured it. */
const ROW_HEIGHT_PX = 33;

/** The table in a scrolling box that draws only the rows in view (and a few around them), so
 * that thousands of rows scroll smoothly; padding rows stand in for the rest. */
export function VirtualRows({ model }: { model: SortedRows }) {
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
