import { useMemo } from "react";
import { Chart } from "../../charts/Chart";
import { histogramOption } from "../../charts/options";
import { formatDuration, plural } from "../../lib/format";
import { durationBars, summarize } from "./histogram";

type Props = {
  durationsNs: readonly number[];
  /** What one duration is, singular: "step", "occurrence". */
  noun: string;
  names?: readonly string[];
  label: string;
};

/** A histogram of durations with the exact summary statistics beneath it. */
export function DurationHistogram({ durationsNs, noun, names, label }: Props) {
  const { option, summary } = useMemo(() => {
    const { bars, unit } = durationBars(durationsNs, noun, names);
    return {
      option: histogramOption(bars, { xName: `Duration (${unit.label})`, yName: "Count" }),
      summary: summarize(durationsNs),
    };
  }, [durationsNs, noun, names]);
  return (
    <>
      <Chart option={option} height={220} label={label} />
      {summary && (
        <dl className="panel-stats">
          {[
            ["Count", plural(summary.count, noun)],
            ["Min", formatDuration(summary.minNs)],
            ["Median", formatDuration(summary.medianNs)],
            ["Mean", formatDuration(summary.meanNs)],
            ["p95", formatDuration(summary.p95Ns)],
            ["Max", formatDuration(summary.maxNs)],
          ].map(([term, value]) => (
            <div key={term}>
              <dt>{term}</dt>
              <dd>{value}</dd>
            </div>
          ))}
        </dl>
      )}
    </>
  );
}
