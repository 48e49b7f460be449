import { describe, expect, it } from "vitest";
import { fieldLabel, formatField, rawFieldText } from "./fieldText";

describe("evidence field text", () => {
  it("names fields in words, without their unit suffix", () => {
    expect(fieldLabel("share_pct")).toBe("Share");
    expect(fieldLabel("step_ns")).toBe("Time in steps");
    expect(fieldLabel("idle_gap_ns")).toBe("Idle gap");
    expect(fieldLabel("h2d_bytes_per_s")).toBe("H2d rate");
    expect(fieldLabel("pageable_bytes")).toBe("Pageable size");
    expect(fieldLabel("pageable_ns")).toBe("Pageable");
    expect(fieldLabel("pageable_pct_of_steps")).toBe("Pageable % of steps");
    expect(fieldLabel("launches")).toBe("Launches");
  });

  it("writes each value in the unit its name carries", () => {
    expect(formatField("step_ns", 1_483_290_157)).toBe("1.483 s");
    expect(formatField("gap_ns", 850_000)).toBe("850 µs");
    expect(formatField("step_ms", 78.94)).toBe("78.94 ms");
    expect(formatField("share_pct", 17.98)).toBe("18.0%");
    expect(formatField("share_pct", 0.04)).toBe("<0.1%");
    expect(formatField("copied_bytes", 2_500_000_000)).toBe("2.5 GB");
    expect(formatField("h2d_bytes_per_s", 12_400_000_000)).toBe("12.4 GB/s");
    expect(formatField("launches_per_s", 1200)).toBe("1,200/s");
    expect(formatField("mean_gbps", 9.87)).toBe("9.9 GB/s");
    expect(formatField("launches", 3856)).toBe("3,856");
    expect(formatField("pageable_pct_of_steps", 21.89)).toBe("21.9%");
    expect(formatField("ratio", 0.3333)).toBe("0.33");
  });

  it("writes nanoseconds since 1970 as a date-time, not a 56-year duration", () => {
    // 1,795,000,000 s since 1970 = 2026-11-18 11:06:40 UTC (date -u -d @1795000000)
    expect(formatField("job_start_ns", 1_795_000_000_000_000_000)).toBe(
      "18 Nov 2026, 11:06:40 UTC",
    );
  });

  it("keeps the raw figure for the tooltip", () => {
    expect(rawFieldText("step_ns", 1_483_290_157)).toBe("step_ns = 1,483,290,157");
  });
});
