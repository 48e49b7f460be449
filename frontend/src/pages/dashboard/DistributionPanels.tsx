import { type ReactNode, useMemo } from "react";
import type { Dashboard, StepTime, TakenOver } from "../../api/dashboard";
import { PieChart } from "../../charts/PieChart";
import type { LegendSlice } from "../../charts/PieChart";
import { Panel } from "../../components/Panel";
import { formatCount, formatDuration } from "../../lib/format";
import { WindowCaption, useWindowCaption } from "../../lib/window";
import { DurationHistogram } from "./DurationHistogram";
import { activitySlices, memoryOpSlices, precisionSlices } from "./slices";
import type { GpuTime } from "./slices";

/** Which steps the distribution shows, and the one step time beside it. */
function stepNote(steps: Dashboard["steps"], stepTime: StepTime): string {
  const all = `All ${formatCount(steps.durations_ns.length)} annotated steps in the window, across all ranks.`;
  if (stepTime.median_ns === null) return all;
  return `${all} Step time: ${formatDuration(stepTime.median_ns)} (${stepTime.label}).`;
}

export function StepTimePanel({
  steps,
  stepTime,
  over,
}: {
  steps: Dashboard["steps"];
  stepTime: StepTime;
  over: TakenOver;
}) {
  const empty = steps.empty_reason ?? (steps.durations_ns.length ? null : "no steps annotated");
  return (
    <OverAnnotatedSteps steps={steps} over={over}>
      <Panel title="Step time distribution" emptyReason={empty} note={stepNote(steps, stepTime)}>
        <DurationHistogram
          durationsNs={steps.durations_ns}
          names={steps.names}
          noun="step"
          label="Step time distribution"
        />
      </Panel>
    </OverAnnotatedSteps>
  );
}

/** Annotations (steps, Forward, …) are recorded in every step: on a sampled job, panels of
 * them cover every annotated step, not only the captured ones, and their caption says so. */
export function OverAnnotatedSteps({
  steps,
  over,
  children,
}: {
  steps: Dashboard["steps"];
  over: TakenOver;
  children: ReactNode;
}) {
  const caption = useWindowCaption();
  const annotated =
    over.what === "captured steps"
      ? `all ${formatCount(steps.durations_ns.length)} annotated steps`
      : caption;
  return <WindowCaption.Provider value={annotated}>{children}</WindowCaption.Provider>;
}

type SlicesPanelProps = {
  title: string;
  note: string;
  slices: LegendSlice[];
  emptyReason: string | null;
  fallback: string;
};

function SlicesPanel({ title, note, slices, emptyReason, fallback }: SlicesPanelProps) {
  return (
    <Panel title={title} note={note} emptyReason={emptyReason ?? (slices.length ? null : fallback)}>
      <PieChart slices={slices} label={title} height={200} />
    </Panel>
  );
}

export function PrecisionPanel({
  precision,
  gpuTime,
}: {
  precision: Dashboard["precision"];
  gpuTime: GpuTime;
}) {
  const slices = useMemo(() => precisionSlices(precision.rows, gpuTime), [precision, gpuTime]);
  return (
    <SlicesPanel
      title="Kernel precision distribution"
      slices={slices}
      emptyReason={precision.empty_reason}
      fallback="no GPU kernels"
      note="Compute kernels' run time by the data type they compute in (FP32, FP16, BF16, INT8, …). Communication (NCCL) and memory kernels are left out: their types are buffer types, not precisions."
    />
  );
}

export function GpuActivityPanel({
  activity,
  gpuTime,
}: {
  activity: Dashboard["gpu_activity"];
  gpuTime: GpuTime;
}) {
  const slices = useMemo(() => activitySlices(activity.rows, gpuTime), [activity, gpuTime]);
  return (
    <SlicesPanel
      title="GPU activity distribution"
      slices={slices}
      emptyReason={activity.empty_reason}
      fallback="no GPU activity"
      note="GPU time running kernels, copying and setting memory, and synchronising."
    />
  );
}

export function MemoryOpsPanel({
  memoryOps,
  gpuTime,
}: {
  memoryOps: Dashboard["memory_ops"];
  gpuTime: GpuTime;
}) {
  const slices = useMemo(() => memoryOpSlices(memoryOps.rows, gpuTime), [memoryOps, gpuTime]);
  return (
    <SlicesPanel
      title="GPU memory operations distribution"
      slices={slices}
      emptyReason={memoryOps.empty_reason}
      fallback="no GPU memory operations"
      note="GPU time per kind of memory operation; hover for bytes moved and bandwidth."
    />
  );
}
