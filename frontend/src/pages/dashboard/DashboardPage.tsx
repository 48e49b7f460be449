import { useQueryClient } from "@tanstack/react-query";
import { useMemo } from "react";
import { type Dashboard, dashboardKey, useDashboard } from "../../api/dashboard";
import type { TrainingJob } from "../../api/types";
import { PartialBadge, StatusBadge } from "../../components/Badges";
import { ErrorAlert, Loading } from "../../components/Feedback";
import { WindowSwitch } from "../../components/JobWindow";
import { WindowCaption } from "../../lib/window";
import { LoadedJobGate } from "../../components/LoadedJobGate";
import { MissingRanksNote } from "../../components/MissingRanks";
import { ReadWarnings } from "../../components/ReadWarnings";
import { formatSeconds, plural } from "../../lib/format";
import { isPartial } from "../../lib/jobs";
import { CustomHistograms } from "./CustomHistograms";
import {
  GpuActivityPanel,
  MemoryOpsPanel,
  OverAnnotatedSteps,
  PrecisionPanel,
  StepTimePanel,
} from "./DistributionPanels";
import { HeadlinePanel } from "./Headline";
import { jobHasGpu } from "./HeadlineModel";
import { KernelCountPanels, KernelTimePanels } from "./KernelPanels";
import { gpuTime } from "./slices";
import { ActiveTimePanel, UtilizationPanel } from "./UtilizationPanels";
import "./dashboard.css";

export function DashboardPage() {
  return (
    <>
      <h1>Dashboard</h1>
      <LoadedJobGate page="dashboard">{(job) => <JobDashboard job={job} />}</LoadedJobGate>
    </>
  );
}

function JobDashboard({ job }: { job: TrainingJob }) {
  const dashboard = useDashboard(job.id);
  const queryClient = useQueryClient();
  // No polling (browser requests count as activity against auto-shutdown): a partial profile
  // shows newer data when the person asks for it or comes back to the window.
  const refresh = () => void queryClient.invalidateQueries({ queryKey: dashboardKey });
  return (
    <>
      <div className="dashboard-heading">
        <h2 className="job-heading">
          {job.name} <StatusBadge status={job.status} />
          {(dashboard.data?.partial ?? isPartial(job)) && <PartialBadge />}
        </h2>
        {dashboard.data && <span className="muted">{profileSummary(dashboard.data, job)}</span>}
        <button
          type="button"
          className="btn btn-small"
          onClick={refresh}
          disabled={dashboard.isFetching}
        >
          {dashboard.isFetching ? "Refreshing…" : "Refresh"}
        </button>
      </div>
      <WindowSwitch job={job} window={dashboard.data?.window} />
      <ReadWarnings warnings={job.read_warnings} />
      <MissingRanksNote jobId={job.id} />
      {dashboard.isError && <ErrorAlert error={dashboard.error} />}
      {dashboard.isPending && <Loading what="the dashboard" />}
      {dashboard.data && (
        <WindowCaption.Provider value={dashboard.data.window.label}>
          <HeadlinePanel jobId={job.id} hasGpu={jobHasGpu(job)} />
          <Panels data={dashboard.data} />
        </WindowCaption.Provider>
      )}
    </>
  );
}

function profileSummary(data: Dashboard, job: TrainingJob): string {
  const nodes = plural(job.nodes.length, "node");
  return `Profile span ${formatSeconds(data.profile_ns)} · ${nodes} · ${plural(data.totals.kernel_runs, "kernel run")}`;
}

function Panels({ data }: { data: Dashboard }) {
  const shareOf = useMemo(() => gpuTime(data.over, data.gpus), [data]);
  return (
    <div className="panel-grid">
      <ActiveTimePanel device="GPU" share={data.gpu_active} />
      <UtilizationPanel device="GPU" utilization={data.gpu_utilization} />
      <ActiveTimePanel device="CPU" share={data.cpu_active} />
      <UtilizationPanel device="CPU" utilization={data.cpu_utilization} />
      <KernelTimePanels kernels={data.kernel_time} gpuTime={shareOf} />
      <KernelCountPanels kernels={data.kernel_count} />
      <StepTimePanel steps={data.steps} stepTime={data.step_time} over={data.over} />
      <PrecisionPanel precision={data.precision} gpuTime={shareOf} />
      <GpuActivityPanel activity={data.gpu_activity} gpuTime={shareOf} />
      <MemoryOpsPanel memoryOps={data.memory_ops} gpuTime={shareOf} />
      <OverAnnotatedSteps steps={data.steps} over={data.over}>
        <CustomHistograms jobId={data.job} annotationNames={data.annotation_names} />
      </OverAnnotatedSteps>
    </div>
  );
}
