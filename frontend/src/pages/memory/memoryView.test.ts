import { describe, expect, it } from "vitest";
import type { MemoryDevice } from "../../api/memory";
import { TIME_AXIS, formatSignedBytes, memoryChartOption } from "./memoryView";

const START_NS = 1_700_000_000_000_000_000;

function device(reserved: number | null): MemoryDevice {
  const at = (ms: number) => START_NS + ms * 1_000_000;
  return {
    part: 1,
    node: "algo-1",
    rank: 0,
    device: "GPU 0",
    device_type: 1,
    device_id: 0,
    time_ns: at(30),
    allocated: 2_790_000_000,
    reserved,
    totals_recorded: reserved !== null,
    events: 3,
    running: [],
    curve: [
      [at(10), 1_000_000_000, reserved],
      [at(30), 2_790_000_000, reserved],
      [at(50), 500_000_000, reserved],
    ],
    allocators: [],
  };
}

type Series = { name: string; data: [number, number][] };

function seriesOf(option: ReturnType<typeof memoryChartOption>): Series[] {
  return (option as unknown as { series: Series[] }).series;
}

describe("memory chart", () => {
  it("draws times since the trace's start and says so", () => {
    const option = memoryChartOption(device(3_000_000_000), START_NS, undefined);
    expect((option as unknown as { xAxis: { name: string } }).xAxis.name).toBe(TIME_AXIS);
    expect(TIME_AXIS).toBe("Time since the trace's start");
    const [allocated, reserved] = seriesOf(option);
    // Unix ns are past what a double keeps exactly: seconds agree to well under a microsecond.
    allocated!.data.forEach(([t], i) => expect(t).toBeCloseTo([0.01, 0.03, 0.05][i]!, 6));
    expect(reserved!.name).toBe("Reserved");
  });

  it("leaves reserved out when the trace did not record it", () => {
    const series = seriesOf(memoryChartOption(device(null), START_NS, undefined));
    expect(series.map((s) => s.name)).toEqual(["Allocated"]);
    expect(series[0]!.data.map(([, bytes]) => bytes)).toEqual([
      1_000_000_000, 2_790_000_000, 500_000_000,
    ]);
  });

  it("breaks the NVML line between the job's sampled rounds", () => {
    // The real H200 collector job's NVML samples (8,296,202,240 B used throughout): every
    // 0.2 s in a round, none for 6.3 s, then the next round's.
    const used = 8_296_202_240;
    const at = [0.2, 0.44, 0.64, 0.84, 7.18, 7.69, 7.92];
    const nvml = {
      device: "GPU 0",
      node: 1,
      points: at.map((s): [number, number] => [START_NS + s * 1e9, used]),
    };
    const [line] = seriesOf(memoryChartOption(null, START_NS, nvml)) as unknown as [
      { name: string; data: [number, number | "-"][] },
    ];
    expect(line.name).toBe("NVML used (GPU 0)");
    expect(line.data.map(([, bytes]) => bytes)).toEqual([
      used,
      used,
      used,
      used,
      "-",
      used,
      used,
      used,
    ]);
    expect(line.data[4]![0]).toBeCloseTo(4.01, 6);
  });

  it("signs freed and allocated bytes", () => {
    expect(formatSignedBytes(-2_048)).toBe("−2.0 kB");
    expect(formatSignedBytes(2_048)).toBe("+2.0 kB");
  });
});
