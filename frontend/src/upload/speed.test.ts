import { describe, expect, it } from "vitest";
import { formatSpeed, SpeedMeter } from "./speed";

describe("SpeedMeter", () => {
  it("measures the rate over the last seconds, not since the start", () => {
    const meter = new SpeedMeter(5_000);
    expect(meter.rate()).toBeNull();
    meter.add(0, 0);
    meter.add(1_000, 10e6); // 10 MB/s for a second
    expect(meter.rate()).toBe(10e6);
    for (let t = 2_000; t <= 10_000; t += 1_000) meter.add(t, 10e6 + ((t - 1_000) / 1_000) * 2e6);
    expect(meter.rate()).toBe(2e6); // the first second's burst is out of the window
  });

  it("writes speeds in megabytes per second", () => {
    expect(formatSpeed(12_345_678)).toBe("12 MB/s");
    expect(formatSpeed(1_250_000)).toBe("1.3 MB/s");
  });
});
