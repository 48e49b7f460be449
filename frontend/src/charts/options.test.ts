import { describe, expect, it } from "vitest";
import { escapeHtml, histogramOption, lineOption, pieOption, tipHtml } from "./options";

type Formatter = (params: unknown) => string;

function tooltipFormatter(option: ReturnType<typeof pieOption>): Formatter {
  return (option.tooltip as { formatter: Formatter }).formatter;
}

describe("chart options", () => {
  it("escapes trace names before they reach tooltip HTML", () => {
    expect(escapeHtml(`kernel<float, 3>("a" & 'b')`)).toBe(
      "kernel&lt;float, 3&gt;(&quot;a&quot; &amp; &#39;b&#39;)",
    );
    expect(tipHtml({ title: "k<T>", lines: ["Launches: 4"] })).toBe(
      '<div class="chart-tip"><div class="chart-tip-title">k&lt;T&gt;</div><div>Launches: 4</div></div>',
    );
  });

  it("draws one pie slice per entry and gives each its own tooltip", () => {
    const option = pieOption([
      { name: "a", value: 3, color: "#111111", tip: { title: "a<int>", lines: ["3 s"] } },
      { name: "b", value: 1, color: "#222222", tip: { title: "b", lines: ["1 s"] } },
    ]);
    const [series] = option.series as [
      { data: { name: string; value: number; itemStyle: { color: string } }[] },
    ];
    expect(series.data.map((d) => [d.name, d.value, d.itemStyle.color])).toEqual([
      ["a", 3, "#111111"],
      ["b", 1, "#222222"],
    ]);
    expect(tooltipFormatter(option)({ dataIndex: 0 })).toContain("a&lt;int&gt;");
    expect(tooltipFormatter(option)({ dataIndex: 1 })).toContain("<div>1 s</div>");
  });

  it("lists every series at the hovered time in a line chart's tooltip", () => {
    const option = lineOption(
      [
        {
          name: "algo-1",
          color: "#111111",
          points: [
            [0, 10],
            [1, 20],
          ],
        },
        {
          name: "algo-2",
          color: "#222222",
          points: [
            [0, 30],
            [1, 40],
          ],
        },
      ],
      { xName: "Time", yMax: 100, formatX: (x) => `${x} s`, formatY: (y) => `${y}%` },
    );
    const html = tooltipFormatter(option)([
      { seriesName: "algo-1", value: [1, 20] },
      { seriesName: "algo-2", value: [1, 40] },
    ]);
    expect(html).toBe(tipHtml({ title: "Time: 1 s", lines: ["algo-1: 20%", "algo-2: 40%"] }));
    expect(option.legend).toMatchObject({ type: "scroll" });
  });

  it("breaks a sampled line where nothing was sampled, and says so on hover", () => {
    // The real H200 collector job's first NVML samples (every 0.2 s), then 6.4 s without any
    // (between two rounds of its training), then the next round's.
    const points: [number, number][] = [
      [0, 48],
      [0.24, 59],
      [0.44, 3],
      [0.64, 55],
      [0.84, 62],
      [7.25, 54],
      [7.45, 0],
    ];
    const line = [{ name: "vm", color: "#111111", points }];
    const axes = {
      xName: "Time",
      formatX: (x: number) => `${x} s`,
      formatY: (y: number) => `${y}%`,
    };
    const sampled = lineOption(line, { ...axes, sampled: true });
    const [series] = sampled.series as [{ data: unknown[] }];
    expect(series.data).toEqual([...points.slice(0, 5), [4.045, "-"], ...points.slice(5)]);
    expect(tooltipFormatter(sampled)([{ seriesName: "vm", value: [4.045, "-"] }])).toBe(
      tipHtml({ title: "Time: 4.045 s", lines: ["vm: no data"] }),
    );
    // A line of figures that are not samples (a run history) is drawn through.
    expect((lineOption(line, axes).series as [{ data: unknown[] }])[0].data).toEqual(points);
  });

  it("labels histogram bars and gives each bar its tooltip", () => {
    const option = histogramOption(
      [
        { label: "10", value: 2, tip: { title: "10 ms – 15 ms", lines: ["2 steps"] } },
        { label: "15", value: 1, tip: { title: "15 ms – 20 ms", lines: ["1 step"] } },
      ],
      { xName: "Duration (ms)", yName: "Count" },
    );
    expect((option.xAxis as { data: string[] }).data).toEqual(["10", "15"]);
    expect((option.series as [{ data: number[] }])[0].data).toEqual([2, 1]);
    expect(tooltipFormatter(option)({ dataIndex: 1 })).toContain("15 ms – 20 ms");
  });
});
