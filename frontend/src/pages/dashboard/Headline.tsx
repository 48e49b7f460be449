import { Link } from "react-router";
import { type Headline, useHeadline } from "../../api/dashboard";
import { useInsights } from "../../api/insights";
import { ErrorAlert } from "../../components/Feedback";
import { formatDuration } from "../../lib/format";
import { jobPath } from "../../lib/jobPath";
import { partLabel, shownParts, topFinding } from "./HeadlineModel";
import "./headline.css";

/** The Dashboard's first lines: where a step's time goes, how busy the GPU is, the step time
 * and what Insights found first. A job without a GPU says so instead of GPU figures of zero. */
export function HeadlinePanel({ jobId, hasGpu = true }: { jobId: number; hasGpu?: boolean }) {
  const headline = useHeadline(jobId);
  if (headline.isError) return <ErrorAlert error={headline.error} />;
  if (!headline.data) return null;
  return <HeadlineFigures jobId={jobId} headline={headline.data} hasGpu={hasGpu} />;
}

const NO_GPU = "not available: no GPU in this job";

function HeadlineFigures(props: { jobId: number; headline: Headline; hasGpu: boolean }) {
  const { jobId, headline, hasGpu } = props;
  const insights = useInsights(jobId);
  const finding = topFinding(insights.data);
  const { step_time: stepTime } = headline;
  return (
    <section className="card headline" aria-label="Headline">
      <div className="headline-figures">
        <Figure
          label="Step time"
          value={stepTime.median_ns === null ? "—" : formatDuration(stepTime.median_ns)}
          over={stepTime.label}
          raw={stepTime.median_ns === null ? undefined : `${stepTime.median_ns} ns`}
        />
        <Figure
          label="GPU utilisation (NVML mean)"
          value={headline.nvml_mean_pct === null ? "—" : `${headline.nvml_mean_pct.toFixed(1)}%`}
          over={
            headline.nvml_mean_pct !== null
              ? "mean of the samples over the whole run"
              : hasGpu
                ? "no NVML samples in this job"
                : NO_GPU
          }
        />
        <Figure
          label="Kernel busy share"
          value={
            headline.kernel_busy_pct === null || !hasGpu
              ? "—"
              : `${headline.kernel_busy_pct.toFixed(1)}%`
          }
          over={hasGpu ? `of the step time, ${headline.over}` : NO_GPU}
        />
      </div>
      <Breakdown headline={headline} hasGpu={hasGpu} />
      <p className="headline-finding">
        {finding ? (
          <>
            Top finding:{" "}
            <Link to={jobPath(jobId, "insights", "", `rule-${finding.rule}`)}>{finding.rule}</Link>
            {finding.recommendation && ` — ${finding.recommendation}`}
          </>
        ) : (
          <span className="muted">
            {insights.data?.report ? "Insights found no issue." : "Insights not computed yet."}
          </span>
        )}
      </p>
    </section>
  );
}

function Figure(props: { label: string; value: string; over: string; raw?: string }) {
  return (
    <div className="headline-figure">
      <span className="headline-label">{props.label}</span>
      <strong title={props.raw}>{props.value}</strong>
      <span className="muted">{props.over}</span>
    </div>
  );
}

function Breakdown({ headline, hasGpu }: { headline: Headline; hasGpu: boolean }) {
  if (headline.steps === 0) {
    return <p className="muted">No steps annotated in this window: no per-step breakdown.</p>;
  }
  const rows = shownParts(headline.breakdown, hasGpu);
  return (
    <figure className="headline-breakdown">
      <figcaption>
        A step, {formatDuration(headline.step_total_ns / headline.steps)} on average over{" "}
        {headline.over}
      </figcaption>
      <div className="headline-bar" role="img" aria-label="Step time breakdown">
        {rows.map((row) => (
          <span
            key={row.part}
            className={`headline-part part-${row.part}`}
            style={{ width: `${row.share_pct}%` }}
            title={`${partLabel(row.part, hasGpu)}: ${row.share_pct}%`}
          />
        ))}
      </div>
      <ul className="headline-legend">
        {rows.map((row) => (
          <li key={row.part} title={`${row.total_ns} ns over ${headline.steps} steps`}>
            <span className={`headline-swatch part-${row.part}`} />
            {partLabel(row.part, hasGpu)} {formatDuration(row.per_step_ns)} ·{" "}
            {row.share_pct.toFixed(1)}%
          </li>
        ))}
      </ul>
    </figure>
  );
}
