import { forwardRef } from "react";
import { HEADER_PX, type Layout, type LayoutRow } from "../../timeline/layout";

type Props = {
  layout: Layout;
  onToggle: (id: string) => void;
  onScroll: (scrollTop: number) => void;
  onShowShortcuts: () => void;
};

function subtitle(row: LayoutRow): string {
  const info = row.node.info ?? {};
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
  { layout, onToggle, onScroll, onShowShortcuts },
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
          </li>
        ))}
      </ul>
    </div>
  );
});
