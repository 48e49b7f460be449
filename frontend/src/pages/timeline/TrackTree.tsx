import { forwardRef } from "react";
import { HEADER_PX, type Layout, type LayoutRow } from "../../timeline/layout";
import { MORE_KIND } from "./groupPages";

type Props = {
  layout: Layout;
  onToggle: (id: string) => void;
  /** Reads the next page of a collapsed group's children. */
  onShowMore: (group: string) => void;
  onScroll: (scrollTop: number) => void;
  onShowShortcuts: () => void;
};

const COUNTED = { threads: "threads", cpu: "processes", gpus: "processes" } as const;

function subtitle(row: LayoutRow): string {
  const info = row.node.info ?? {};
  if (row.node.children_count !== undefined) {
    const noun = COUNTED[row.node.kind as keyof typeof COUNTED] ?? "tracks";
    return `${row.node.children_count.toLocaleString("en-US")} ${noun}`;
  }
  if (row.node.kind === "process") {
    const ranks = (info.ranks as number[] | undefined) ?? [];
    return ranks.length === 1 ? `rank ${ranks[0]}` : `ranks ${ranks.join(", ")}`;
  }
  if (row.kind === "events" && row.node.events !== undefined)
    return row.node.events.toLocaleString("en-US");
  if (row.kind === "counter" && info.unit) return String(info.unit);
  return "";
}

/** The track names beside the canvas; it scrolls, and the canvas follows its scroll position. */
export const TrackTree = forwardRef<HTMLDivElement, Props>(function TrackTree(
  { layout, onToggle, onShowMore, onScroll, onShowShortcuts },
  ref,
) {
  return (
    <div
      ref={ref}
      className="tl-tree"
      onScroll={(event) => onScroll(event.currentTarget.scrollTop)}
    >
      <div className="tl-tree-header" style={{ height: HEADER_PX }}>
        <span className="muted">Tracks</span>
        <button type="button" className="btn btn-small" onClick={onShowShortcuts}>
          Keyboard shortcuts
        </button>
      </div>
      <ul className="tl-tree-rows" style={{ height: layout.height }} aria-label="Timeline tracks">
        {layout.rows.map((row) => (
          <li
            key={row.node.id}
            className={`tl-tree-row tl-row-${row.kind}`}
            style={{ top: row.y, height: row.height, paddingLeft: 6 + row.level * 14 }}
            data-track={row.node.id}
          >
            {row.node.kind === MORE_KIND ? (
              <MoreRow row={row} onShowMore={onShowMore} />
            ) : (
              <TrackRow row={row} onToggle={onToggle} />
            )}
          </li>
        ))}
      </ul>
    </div>
  );
});

function TrackRow({ row, onToggle }: { row: LayoutRow; onToggle: (id: string) => void }) {
  return (
    <>
      {row.expandable ? (
        <button
          type="button"
          className="tl-toggle"
          aria-expanded={row.expanded}
          aria-label={`${row.expanded ? "Collapse" : "Expand"} ${row.node.label}`}
          onClick={() => onToggle(row.node.id)}
        >
          {row.expanded ? "▾" : "▸"}
        </button>
      ) : (
        <span className="tl-toggle-space" />
      )}
      <span className="tl-track-label" title={row.node.label}>
        {row.node.label}
      </span>
      <span className="tl-track-sub">{subtitle(row)}</span>
    </>
  );
}

/** After a collapsed group's pages: how many of its children show, and the next page. */
function MoreRow({ row, onShowMore }: { row: LayoutRow; onShowMore: (group: string) => void }) {
  const { group, shown, count } = row.node.info as { group: string; shown: number; count: number };
  return (
    <>
      <button type="button" className="btn btn-small tl-more" onClick={() => onShowMore(group)}>
        Show more
      </button>
      <span className="tl-track-sub">
        {shown.toLocaleString("en-US")} of {count.toLocaleString("en-US")} shown
      </span>
    </>
  );
}
