import { type ComponentProps, lazy, Suspense } from "react";
import "./Chart.css";
import { preloadCharts } from "./preload";

// The charting library is most of the app's weight: it loads with the first chart drawn, so the
// other pages and a dashboard's empty panels never wait for it.
const EChart = lazy(async () => ({ default: (await preloadCharts()).EChart }));

type Props = ComponentProps<typeof EChart>;

/** A chart, with a placeholder of its size while the charting library loads. */
export function Chart(props: Props) {
  return (
    <Suspense fallback={<div className="chart chart-loading" style={{ height: props.height }} />}>
      <EChart {...props} />
    </Suspense>
  );
}
