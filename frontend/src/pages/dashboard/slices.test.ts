import { describe, expect, it } from "vitest";
import { OTHER_COLOUR } from "../../lib/colour";
import { LONG_KERNEL, makeDashboard } from "./fixtures";
import {
  activeSlices,
  activitySlices,
  gpuTime,
  kernelCountSlices,
  kernelTimeSlices,
  memoryOpSlices,
  precisionSlices,
  utilizationLines,
} from "./slices";

const data = makeDashboard();
const oneGpu = gpuTime(data.over, 1);

describe("dashboard slices", () => {
  it("splits data points into active and idle", () => {
    const [active, idle] = activeSlices(data.gpu_active, "GPU");
    expect(active).toMatchObject({
      name: "Active",
      value: 812,
      valueText: "812 points",
      shareText: "81.2%",
    });
    expect(active!.tip).toEqual({
      title: "GPU active",
      lines: ["812 data points (utilisation > 0%)", "81.2% of 1,000 data points"],
    });
    expect(idle).toMatchObject({ name: "Idle", value: 188, shareText: "18.8%" });
    expect(activeSlices(data.cpu_active, "CPU")).toEqual([]);
  });

  it("gives a sampled job's kernel time as a share of its captured steps, not of the span", () => {
    const captured = gpuTime(
      { what: "captured steps", ns: 845_000_000, steps: 16, label: "the 16 captured steps' time" },
      1,
    );
    expect(captured).toEqual({
      ns: 845_000_000,
      label: "the captured steps",
      caption: "the 16 captured steps' 0.845000 s",
    });
    const [top] = kernelTimeSlices(data.kernel_time, { k: 2, withOther: true, gpuTime: captured });
    expect(top!.tip.lines[1]).toBe("3.1% of the captured steps");
  });

  it("gives kernel time on many GPUs as a share of their summed time, not of one span", () => {
    const eight = gpuTime(data.over, 8);
    expect(eight.ns).toBe(8 * data.profile_ns);
    expect(eight.caption).toBe("the 8 GPUs' time (the 0.578889 s span × 8)");
    const [top] = kernelTimeSlices(data.kernel_time, { k: 2, withOther: true, gpuTime: eight });
    // 26.303973 ms of 8 × 578.889 ms: a share no kernel can take past 100% of its GPUs.
    expect(top).toMatchObject({ value: 26_303_973, shareText: "0.6%" });
    expect(top!.tip.lines[1]).toBe("0.6% of the 8 GPUs' time");
    const [fp32] = precisionSlices(data.precision.rows, eight);
    expect(fp32!.tip.lines[2]).toMatch(/ of the 8 GPUs' time$/);
  });

  it("gives the top k kernels by time in seconds and % of the profile, then Other", () => {
    const slices = kernelTimeSlices(data.kernel_time, { k: 2, withOther: true, gpuTime: oneGpu });
    expect(slices.map((s) => s.legendName)).toEqual([
      "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, Array<char*, 3> >",
      "volta_sgemm_64x64_nt",
      "Other",
    ]);
    expect(slices[0]).toMatchObject({
      name: LONG_KERNEL,
      value: 26_303_973,
      valueText: "0.026304 s",
      shareText: "4.5%",
    });
    expect(slices[0]!.tip).toEqual({
      title: LONG_KERNEL,
      lines: [
        "Total time: 0.026304 s (26.3 ms)",
        "4.5% of the profile",
        "10.5% of all kernel time",
        "Launches: 405",
      ],
    });
    // 250 ms of kernels less the top two (26.303973 + 22.668122 ms).
    expect(slices[2]).toMatchObject({
      value: 201_027_905,
      color: OTHER_COLOUR,
      valueText: "0.201028 s",
      shareText: "34.7%",
    });
    expect(slices[2]!.tip.lines).toContain("Launches: 3,915");
  });

  it("shows the top kernels only, without Other, for the top-15 panels", () => {
    const slices = kernelTimeSlices(data.kernel_time, { k: 15, withOther: false, gpuTime: oneGpu });
    expect(slices).toHaveLength(15);
    expect(slices.some((s) => s.name === "Other")).toBe(false);
  });

  it("gives launch counts with their share of all launches", () => {
    const slices = kernelCountSlices(data.kernel_count, { k: 1, withOther: true });
    expect(slices.map((s) => [s.name, s.value, s.valueText, s.shareText])).toEqual([
      [LONG_KERNEL, 405, "405", "9.3%"],
      ["Other", 3945, "3,945", "90.7%"],
    ]);
    expect(slices[0]!.tip.lines).toEqual([
      "Launches: 405",
      "9.3% of all 4,350 launches",
      "Total time: 0.026304 s (26.3 ms)",
    ]);
  });

  it("orders GPU activity by time and leaves out kinds that took none", () => {
    const slices = activitySlices(data.gpu_activity.rows, oneGpu);
    expect(slices.map((s) => [s.name, s.shareText])).toEqual([
      ["Kernels", "85.9%"],
      ["Memory copies (memcpy)", "13.7%"],
      ["Memory sets (memset)", "0.3%"],
    ]);
    expect(slices[1]!.tip.lines).toEqual([
      "Total time: 0.040000 s (40 ms)",
      "13.7% of GPU activity time",
      "6.9% of the profile",
      "Operations: 1,600",
    ]);
  });

  it("adds bytes and bandwidth to memory operations that move data", () => {
    const [htod, dtoh, memset] = memoryOpSlices(data.memory_ops.rows, oneGpu);
    expect(htod!.tip.lines.slice(-2)).toEqual(["Bytes: 300 MB", "Bandwidth: 10.00 GB/s"]);
    expect(dtoh!.tip.lines.slice(-2)).toEqual(["Bytes: 3.2 kB", "Bandwidth: 0.00 GB/s"]);
    expect(memset!.tip.lines).not.toContain("Bytes: 0 B");
  });

  it("gives kernel precision as shares of kernel time", () => {
    expect(
      precisionSlices(data.precision.rows, oneGpu).map((s) => [s.name, s.valueText, s.shareText]),
    ).toEqual([
      ["FP32", "0.240000 s", "96.0%"],
      ["INT64", "0.010000 s", "4.0%"],
    ]);
  });

  it("puts every node on one time axis from the earliest sample", () => {
    const [first, second] = utilizationLines(data.gpu_utilization);
    expect(first).toMatchObject({
      name: "algo-1",
      points: [
        [0, 0],
        [0.5, 62.5],
        [1, 100],
      ],
    });
    expect(second!.name).toBe("algo-2");
    // Epoch nanoseconds exceed 2^53: JSON numbers keep them to about 256 ns, plenty for a chart.
    const [[x1, y1], [x2, y2]] = second!.points as [[number, number], [number, number]];
    expect([x1, y1, x2, y2]).toEqual([expect.closeTo(0.25, 6), 40, expect.closeTo(0.75, 6), 80]);
  });
});
