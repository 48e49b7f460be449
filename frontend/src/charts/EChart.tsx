import { useEffect, useRef } from "react";
import { type ChartOption, type ECharts, init } from "./echarts";
import { tooltipPosition } from "./tooltipPosition";

type Props = {
  option: ChartOption;
  height: number;
  /** What the chart shows, for screen readers. */
  label: string;
  /** A data item of the first series to highlight with its tooltip (e.g. from a legend row). */
  highlighted?: number | null;
  /** Called with a clicked point's x value (points given as [x, y]). */
  onPointClick?: (x: number) => void;
};

/** One ECharts instance bound to a div: created on mount, resized with it, disposed on unmount. */
export function EChart({ option, height, label, highlighted = null, onPointClick }: Props) {
  const container = useRef<HTMLDivElement>(null);
  const chart = useRef<ECharts | null>(null);
  // Read at click time: the handler is bound once, with the instance.
  const pointClick = useRef(onPointClick);
  useEffect(() => {
    pointClick.current = onPointClick;
  }, [onPointClick]);

  useEffect(() => {
    const instance = init(container.current!, undefined, { renderer: "svg" });
    chart.current = instance;
    instance.on("click", (params) => {
      const value = (params as { value?: unknown }).value;
      if (Array.isArray(value) && typeof value[0] === "number") pointClick.current?.(value[0]);
    });
    const observer = new ResizeObserver(() => instance.resize());
    observer.observe(container.current!);
    return () => {
      observer.disconnect();
      instance.dispose();
      chart.current = null;
    };
  }, []);

  useEffect(() => {
    chart.current?.setOption(keepTooltipOnScreen(option, container.current!), { notMerge: true });
    // setOption draws at once: what a browser test or the first-views bench waits on.
    container.current!.dataset.drawn = "data";
  }, [option]);

  useEffect(() => {
    const instance = chart.current;
    if (!instance || highlighted === null) return;
    instance.dispatchAction({ type: "highlight", seriesIndex: 0, dataIndex: highlighted });
    instance.dispatchAction({ type: "showTip", seriesIndex: 0, dataIndex: highlighted });
    return () => {
      // On unmount the instance is disposed first: nothing is left to downplay.
      if (instance.isDisposed()) return;
      instance.dispatchAction({ type: "downplay", seriesIndex: 0, dataIndex: highlighted });
      instance.dispatchAction({ type: "hideTip" });
    };
  }, [highlighted]);

  return <div ref={container} className="chart" style={{ height }} role="img" aria-label={label} />;
}

/** Places the option's tooltip by the window, where ECharts would keep it inside the chart. */
function keepTooltipOnScreen(option: ChartOption, element: HTMLElement): ChartOption {
  const { tooltip } = option;
  if (!tooltip || Array.isArray(tooltip)) return option;
  const position = (
    point: [number, number],
    _params: unknown,
    _dom: unknown,
    _rect: unknown,
    size: { contentSize: [number, number] },
  ) =>
    tooltipPosition(point, size.contentSize, element.getBoundingClientRect(), [
      window.innerWidth,
      window.innerHeight,
    ]);
  return { ...option, tooltip: { ...tooltip, position } };
}
