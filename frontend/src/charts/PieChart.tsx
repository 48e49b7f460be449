import { useMemo, useState } from "react";
import { Chart } from "./Chart";
import { type PieSlice, pieOption } from "./options";
import "./PieChart.css";

/** A slice with what its legend row shows beside the pie. */
export type LegendSlice = PieSlice & {
  /** The name as the legend prints it (abbreviated); the full name shows on hover. */
  legendName: string;
  valueText: string;
  shareText: string;
};

type Props = {
  slices: readonly LegendSlice[];
  label: string;
  height?: number;
  /** Code names (kernels) read best in a monospace font. */
  codeNames?: boolean;
};

/**
 * A pie with its legend as a table: long names are abbreviated there with the full name on
 * hover, each row gives the exact value, and hovering a row highlights its slice.
 */
export function PieChart({ slices, label, height = 240, codeNames = false }: Props) {
  const option = useMemo(() => pieOption(slices), [slices]);
  const [hovered, setHovered] = useState<number | null>(null);
  return (
    <div className="pie">
      <div className="pie-chart">
        <Chart option={option} height={height} label={label} highlighted={hovered} />
      </div>
      <div className="pie-legend">
        <table
          aria-label={`${label}: legend`}
          className={codeNames ? "pie-legend-code" : undefined}
        >
          <tbody>
            {slices.map((slice, index) => (
              <tr
                key={`${index}:${slice.name}`}
                onMouseEnter={() => setHovered(index)}
                onMouseLeave={() => setHovered(null)}
              >
                <td className="pie-swatch">
                  <span style={{ background: slice.color }} />
                </td>
                <td className="pie-name" title={slice.name}>
                  <span>{slice.legendName}</span>
                </td>
                <td className="pie-value">{slice.valueText}</td>
                <td className="pie-share">{slice.shareText}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
