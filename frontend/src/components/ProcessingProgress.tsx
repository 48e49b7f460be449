import type { TrainingJob } from "../api/types";

type Props = Pick<TrainingJob, "parts_total" | "parts_done" | "parts_failed">;

/** Processed parts out of uploaded parts, with failures called out. */
export function ProcessingProgress({ parts_total, parts_done, parts_failed }: Props) {
  if (parts_total === 0) return <span className="muted">No parts yet</span>;
  const donePercent = (100 * parts_done) / parts_total;
  const failedPercent = (100 * parts_failed) / parts_total;
  const label = `${parts_done} of ${parts_total} parts processed`;
  return (
    <div className="progress" title={parts_failed ? `${label}, ${parts_failed} failed` : label}>
      <div
        className="progress-track"
        role="progressbar"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={parts_total}
        aria-valuenow={parts_done}
      >
        <div className="progress-done" style={{ width: `${donePercent}%` }} />
        <div className="progress-failed" style={{ width: `${failedPercent}%` }} />
      </div>
      <span className="progress-text">
        {parts_done}/{parts_total}
        {parts_failed > 0 && <span className="text-error"> · {parts_failed} failed</span>}
      </span>
    </div>
  );
}
