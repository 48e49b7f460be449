import { Link } from "react-router";
import { useVerdict, verdictLabel } from "../../api/history";
import { formatDuration } from "../../lib/format";
import { jobPath } from "../../lib/jobPath";

/** Causes named on the job's page; the History page lists all of them. */
const TOP_CAUSES = 3;
const STATUS_CLASS: Record<string, string> = {
  regression: "text-error",
  no_regression: "text-success",
};

/** The job's series and its regression verdict: against which run, why, and the top causes. */
export function RunVerdict({ jobId }: { jobId: number }) {
  const verdict = useVerdict(jobId);
  const data = verdict.data;
  const status = data?.status ?? "pending";
  return (
    <section className="card" aria-labelledby="info-verdict">
      <h3 id="info-verdict">Regression verdict</h3>
      {/* Secondary to the job's own facts: a failed read is said here, not raised as an alert. */}
      {verdict.isError && (
        <p className="muted">
          The verdict could not be read:{" "}
          {verdict.error instanceof Error ? verdict.error.message : String(verdict.error)}
        </p>
      )}
      {verdict.isPending && <p className="muted">Reading the verdict…</p>}
      {data && (
        <>
          <dl className="facts">
            <dt>Series</dt>
            <dd>
              {data.series && data.series_id ? (
                <Link to={`/history?series=${data.series_id}`}>{data.series}</Link>
              ) : (
                "—"
              )}
            </dd>
            <dt>Verdict</dt>
            <dd>
              <span className={`verdict ${STATUS_CLASS[status] ?? ""}`}>
                {verdictLabel(status)}
              </span>
            </dd>
            <dt>Baseline</dt>
            <dd>
              {data.baseline && data.baseline_name ? (
                <Link to={jobPath(data.baseline, "dashboard")}>{data.baseline_name}</Link>
              ) : (
                "—"
              )}
            </dd>
          </dl>
          <p>{status === "unjudged" ? `Could not judge: ${data.reason}` : data.reason}</p>
          {data.causes.length > 0 && (
            <>
              <h4>Top causes, per step per rank</h4>
              <ol aria-label="Top causes">
                {data.causes.slice(0, TOP_CAUSES).map((cause) => (
                  <li key={`${cause.kind}:${cause.name}`}>
                    <code>{cause.name}</code>: {signed(cause.delta_ns)}. {cause.detail}
                  </li>
                ))}
              </ol>
            </>
          )}
        </>
      )}
    </section>
  );
}

function signed(ns: number): string {
  return `${ns > 0 ? "+" : ns < 0 ? "−" : ""}${formatDuration(Math.abs(ns))}`;
}
