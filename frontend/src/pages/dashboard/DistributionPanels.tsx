import { useMemo } from "react";
import type { Dashboard } from "../../api/dashboard";
import { PieChart } from "../../charts/PieChart";
import type { LegendSlice } from "../../charts/PieChart";
import { Panel } from "../../components/Panel";
import { DurationHistogram } from "./DurationHistogram";
import { activitySlices, memoryOpSlices, precisionSlices } from "./slices";

export function StepTimePanel({ steps }: { steps: Dashboard["steps"] }) {
  const empty = steps.empty_reason ?? (steps.durations_ns.length ? null : "no steps annotated");
  return (
    <Panel
      title="Step time distribution"
      emptyReason={empty}
      note="Durations of the annotated training steps across all ranks."
    >
      <DurationHistogram
        durationsNs={steps.durations_ns}
        names={steps.names}
        noun="step"
        label="Step time distribution"
      />
    </Panel>
  );
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
  profileNs,
}: {
  precision: Dashboard["precision"];
  profileNs: number;
}) {
  const slices = useMemo(() => precisionSlices(precision.rows, profileNs), [precision, profileNs]);
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
  profileNs,
}: {
  activity: Dashboard["gpu_activity"];
  profileNs: number;
}) {
  const slices = useMemo(() => activitySlices(activity.rows, profileNs), [activity, profileNs]);
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
  profileNs,
}: {
  memoryOps: Dashboard["memory_ops"];
  profileNs: number;
}) {
  const slices = useMemo(() => memoryOpSlices(memoryOps.rows, profileNs), [memoryOps, profileNs]);
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
