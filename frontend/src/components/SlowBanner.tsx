import type { Cluster } from "../api/cluster";
import { formatDuration } from "../lib/format";
import "./SlowBanner.css";

/** The ranks and nodes flagged as slow, with the rule that flags them (cluster and insights pages). */
export function SlowBanner({ data }: { data: Cluster }) {
  const rule =
    `robust z-score 0.6745·(x − median)/MAD above ${data.rule.robust_z_threshold}, or over ` +
    `${data.rule.mad_zero_ratio}× the median when most values are equal; never under ` +
    `${Math.round(100 * data.rule.min_excess)}% above the median; at least three ranks or nodes.`;
  if (!data.slow.length) {
    return (
      <p className="alert alert-info slow-banner" title={rule}>
        No slow rank or node found ({rule})
      </p>
    );
  }
  return (
    <div className="alert alert-warning slow-banner" role="alert">
      <strong>
        Slow {data.slow.some((f) => f.scope === "node") ? "ranks and nodes" : "ranks"}:
      </strong>
      <ul>
        {data.slow.map((f) => (
          <li key={`${f.scope}:${f.key}:${f.metric}`}>
            {f.scope === "rank" ? `Rank ${f.key}` : `Node ${f.key}`}: {f.label}{" "}
            {formatDuration(f.value_ns)} vs median {formatDuration(f.median_ns)}
            {f.ratio !== null && ` (${f.ratio.toFixed(2)}×)`}
            {f.robust_z !== null && `, robust z ${f.robust_z.toFixed(1)}`}
          </li>
        ))}
      </ul>
      <p className="muted">Rule: {rule}</p>
    </div>
  );
}
