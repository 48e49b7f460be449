import { useJobSummary } from "../api/ranks";
import { missingRanksNote } from "../lib/ranks";

const WHY =
  "The traces say the job ran on more ranks than sent a trace: figures over all ranks describe only the ranks that arrived.";

/** A note above a job's figures when some of its ranks sent nothing. */
export function MissingRanksNote({ jobId }: { jobId: number }) {
  const note = missingRanksNote(useJobSummary(jobId).data ?? NOTHING);
  if (!note) return null;
  return (
    <div className="alert alert-warning" role="status" data-testid="missing-ranks">
      <strong>{note}.</strong> Figures over all ranks describe only the ranks that arrived.
    </div>
  );
}

/** The catalog row's short form of the note. */
export function MissingRanksBadge({ jobId }: { jobId: number }) {
  const note = missingRanksNote(useJobSummary(jobId).data ?? NOTHING);
  if (!note) return null;
  return (
    <span
      className="badge badge-partial"
      title={`${note}. ${WHY}`}
      data-testid="missing-ranks-badge"
    >
      {note.split(" · ")[0]}
    </span>
  );
}

const NOTHING = { ranks: [], world_size: null, missing_ranks: [] };
