import type { TrainingJob } from "../api/types";

type Warnings = TrainingJob["read_warnings"];

/** A job some of whose events were not recognised must never pass for a complete profile. */
export function ReadWarnings({ warnings }: { warnings: Warnings }) {
  if (!warnings?.length) return null;
  return (
    <div className="notice read-warnings" role="alert">
      <strong>This profile may be incomplete.</strong> The server did not recognise some events:
      <ul>
        {warnings.map((w) => (
          <li key={w.part}>
            <span className="mono">{w.file}</span> (rank {w.rank}): {w.message}
          </li>
        ))}
      </ul>
    </div>
  );
}

export function ReadWarningBadge({ warnings }: { warnings: Warnings }) {
  if (!warnings?.length) return null;
  return (
    <span
      className="badge badge-partial"
      title={warnings.map((w) => `${w.file}: ${w.message}`).join("\n")}
    >
      ⚠ not fully read
    </span>
  );
}
