import { fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { PieChart, type LegendSlice } from "./PieChart";
import { withChartLayout } from "./testing";

const slice = (name: string, value: number, color: string): LegendSlice => ({
  name,
  legendName: name.slice(0, 8),
  value,
  color,
  valueText: `${value} s`,
  shareText: `${value}%`,
  tip: { title: name, lines: [`Total time: ${value} s`] },
});

describe("pie chart with a legend table", () => {
  withChartLayout();

  it("draws a slice per entry and shows a slice's tooltip while its legend row is hovered", async () => {
    const { container } = render(
      <PieChart
        label="Kernel time"
        slices={[
          slice("gemm_kernel<float, 128>", 60, "#4e79a7"),
          slice("reduce_kernel<float>", 40, "#f28e2b"),
        ]}
      />,
    );
    const chart = await screen.findByRole("img", { name: "Kernel time" });
    await waitFor(() =>
      expect(chart.querySelectorAll("path[fill='#4e79a7'], path[fill='#f28e2b']")).toHaveLength(2),
    );

    const row = within(container).getByTitle("gemm_kernel<float, 128>").closest("tr")!;
    expect(row).toHaveTextContent("gemm_ker60 s60%");
    fireEvent.mouseEnter(row);
    const tip = await waitFor(() => {
      const found = document.body.querySelector(".chart-tip");
      expect(found).not.toBeNull();
      return found!;
    });
    expect(tip).toHaveTextContent("gemm_kernel<float, 128>Total time: 60 s");
  });
});
