import { Link } from "react-router";
import { useCluster } from "../../api/cluster";
import {
  isComputing,
  reportUrl,
  useAnalyses,
  useInsights,
  useRuleParameters,
} from "../../api/insights";
import type { TrainingJob } from "../../api/types";
import { StatusBadge } from "../../components/Badges";
import { ErrorAlert, Loading } from "../../components/Feedback";
import { WindowSwitch } from "../../components/JobWindow";
import { WindowCaption } from "../../lib/window";
import { LoadedJobGate } from "../../components/LoadedJobGate";
import { MissingRanksNote } from "../../components/MissingRanks";
import { SlowBanner } from "../../components/SlowBanner";
import { jobPath } from "../../lib/jobPath";
import { AnalysesSection } from "./AnalysesSection";
import { ParametersForms } from "./ParametersForm";
import { RuleCard } from "./RuleCard";
import { issuesFirst } from "./ruleOrder";
import "./insights.css";

export function InsightsPage() {
  return (
    <>
      <h1>Insights</h1>
      <LoadedJobGate page="insights page">{(job) => <JobInsights job={job} />}</LoadedJobGate>
    </>
  );
}

function JobInsights({ job }: { job: TrainingJob }) {
  const insights = useInsights(job.id);
  const parameters = useRuleParameters(job.id);
  const analyses = useAnalyses(job.id, insights.data?.computed_at);
  const cluster = useCluster(job.id, null);
  const data = insights.data;
  const summary = data?.report?.summary;
  return (
    <>
      <div className="insights-heading">
        <h2 className="job-heading">
          {job.name} <StatusBadge status={job.status} />
        </h2>
        {summary && (
          <span className="muted">
            {summary.issue_found.length} issues · {summary.no_issue.length} fine ·{" "}
            {summary.not_evaluated.length} not evaluated
          </span>
        )}
        {isComputing(data?.status) && <span className="muted">Running the rules…</span>}
        <a
          className={`btn btn-primary${data?.report ? "" : " disabled"}`}
          href={reportUrl(job.id)}
          download
          aria-disabled={!data?.report}
        >
          Download report
        </a>
      </div>
      <MissingRanksNote jobId={job.id} />
      <WindowSwitch job={job} window={data?.window} />
      {insights.isError && <ErrorAlert error={insights.error} />}
      {insights.isPending && <Loading what="the insights" />}
      {data?.status === "no_data" && (
        <p className="muted">This job has no parsed profile data yet.</p>
      )}
      {data?.status === "failed" && <p className="text-error">{data.error}</p>}
      {cluster.data && cluster.data.ranks.length >= 2 && (
        <section className="card" aria-label="Slow ranks and nodes">
          <h2>Slow ranks and nodes</h2>
          <SlowBanner data={cluster.data} />
          <Link to={jobPath(job.id, "cluster")}>Open the cluster view</Link> for every rank's step
          breakdown.
        </section>
      )}
      {data?.report?.recommendations && data.report.recommendations.length > 0 && (
        <div className="insights-rules" aria-label="Recommendations">
          <h2>Recommendations from the trace</h2>
          <p className="muted">
            Read from the trace ({data.window?.label ?? "the job's window"}): data loading,
            synchronisation, launch overhead, tensor cores, copies to the GPU and communication.
            Each place links to the timeline.
          </p>
          {issuesFirst(data.report.recommendations).map((rule) => (
            <RuleCard key={rule.rule} rule={rule} />
          ))}
        </div>
      )}
      {data?.report && (
        <div className="insights-rules">
          <h2>Rules</h2>
          {issuesFirst(data.report.rules).map((rule) => (
            <RuleCard key={rule.rule} rule={rule} />
          ))}
        </div>
      )}
      {parameters.data && <ParametersForms job={job} parameters={parameters.data} />}
      <h2>Trace analyses</h2>
      {analyses.isError && <ErrorAlert error={analyses.error} />}
      {analyses.data && (
        <WindowCaption.Provider value={analyses.data.window?.label ?? null}>
          <AnalysesSection analyses={analyses.data} framework={job.framework ?? ""} />
        </WindowCaption.Provider>
      )}
    </>
  );
}
