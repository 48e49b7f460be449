import { exportUrl } from "../../api/timeline";
import { SearchBox, type SearchPick } from "./SearchBox";
import { toggleRank } from "./tree";

/** Above the tracks: search, the rank filter (with more than one rank), and the jumps and
 * exports of the whole job and of what is shown. */
export function Toolbar({
  jobId,
  originNs,
  onPickSearch,
  allRanks,
  ranks,
  onRanks,
  onWholeJob,
  shownRange,
}: {
  jobId: number;
  originNs: string;
  onPickSearch: (pick: SearchPick) => void;
  allRanks: number[];
  /** The ranks shown; null: all. */
  ranks: number[] | null;
  onRanks: (ranks: number[] | null) => void;
  onWholeJob: () => void;
  /** What the canvas shows (absolute ns), once it has drawn. */
  shownRange: { startNs: string; endNs: string } | null;
}) {
  return (
    <div className="tl-toolbar">
      <SearchBox jobId={jobId} originNs={originNs} onPick={onPickSearch} />
      {allRanks.length > 1 && (
        <fieldset className="status-filter">
          <legend>Ranks</legend>
          {allRanks.map((rank) => {
            const on = !ranks || ranks.includes(rank);
            return (
              <label key={rank} className={`chip ${on ? "chip-on" : ""}`}>
                <input
                  type="checkbox"
                  checked={on}
                  onChange={() => onRanks(toggleRank(ranks, allRanks, rank))}
                />
                {rank}
              </label>
            );
          })}
        </fieldset>
      )}
      <span className="tl-toolbar-end">
        <button type="button" className="btn btn-small" onClick={onWholeJob}>
          Whole job
        </button>
        {shownRange && (
          <a className="btn btn-small" href={exportUrl(jobId, shownRange)}>
            Export visible range
          </a>
        )}
        <a className="btn btn-small" href={exportUrl(jobId)}>
          Export whole job
        </a>
      </span>
    </div>
  );
}
