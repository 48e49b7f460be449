import { type ReactNode, useMemo } from "react";
import type { ActiveShare, Utilization } from "../../api/dashboard";
import { Chart } from "../../charts/Chart";
import { lineOption } from "../../charts/options";
import { PieChart } from "../../charts/PieChart";
import { Panel } from "../../components/Panel";
import { WindowCaption, useWindowCaption } from "../../lib/window";
import { activeSlices, utilizationLines } from "./slices";

type Device = "GPU" | "CPU";

const SOURCES: Record<string, string> = {
  nvml: "NVML utilisation samples, over the whole run (not only the captured steps)",
  kernel_busy: "kernel busy time in the window (the trace has no NVML samples)",
  psutil: "psutil CPU samples, over the whole run (not only the captured steps)",
};

function sourceNote(source: string | null): string {
  return source ? `From ${SOURCES[source] ?? source}.` : "";
}

/** Measured samples cover the whole run whatever the window: their panels' caption says so. */
function OverSamples({ source, children }: { source: string | null; children: ReactNode }) {
  const caption = useWindowCaption();
  const measured = source === "nvml" || source === "psutil";
  return (
    <WindowCaption.Provider value={measured ? "the whole run (samples)" : caption}>
      {children}
    </WindowCaption.Provider>
  );
}

export function ActiveTimePanel({ device, share }: { device: Device; share: ActiveShare }) {
  const slices = useMemo(() => activeSlices(share, device), [share, device]);
  const empty = share.empty_reason ?? (slices.length ? null : `no ${device} utilisation samples`);
  return (
    <OverSamples source={share.source}>
      <Panel
        title={`${device} active time`}
        emptyReason={empty}
        size="narrow"
        note={`Data points with ${device} utilisation above 0% (active) and at 0% (idle), across all nodes: a count of samples, not the mean utilisation. ${sourceNote(share.source)}`}
      >
        <PieChart slices={slices} label={`${device} active time`} height={200} />
      </Panel>
    </OverSamples>
  );
}

function formatSecondsAxis(seconds: number): string {
  return `${Number(seconds.toFixed(3))} s`;
}

function formatPercentAxis(percent: number): string {
  return `${Number(percent.toFixed(1))}%`;
}

export function UtilizationPanel({
  device,
  utilization,
}: {
  device: Device;
  utilization: Utilization;
}) {
  const option = useMemo(
    () =>
      lineOption(utilizationLines(utilization), {
        xName: "Time since first sample",
        yMax: 100,
        formatX: formatSecondsAxis,
        formatY: formatPercentAxis,
        sampled: true,
      }),
    [utilization],
  );
  const hasPoints = utilization.series.some((series) => series.points.length > 0);
  const empty = utilization.empty_reason ?? (hasPoints ? null : `no ${device} utilisation samples`);
  return (
    <OverSamples source={utilization.source}>
      <Panel
        title={`${device} utilisation over time`}
        emptyReason={empty}
        size="wide"
        note={`Average over each node's ${device}s, one line per node. Drag the slider to zoom. ${sourceNote(utilization.source)}`}
      >
        <Chart option={option} height={240} label={`${device} utilisation over time per node`} />
      </Panel>
    </OverSamples>
  );
}
