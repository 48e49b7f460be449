import { describe, expect, it } from "vitest";
import { parseTimelineUrl, writeTimelineUrl } from "./urlState";

describe("timeline URL state", () => {
  it("round-trips everything a shared link holds", () => {
    const state = {
      job: 12,
      ranks: [0, 3],
      range: { startNs: "1712195495595112798", endNs: "1712195495997096942" },
      selection: "41:2087",
      open: ["algo-1", "algo-1/gpus", "algo-1/1102/gpu0/device"],
      area: {
        startNs: "1712195495600000001",
        endNs: "1712195495700000003",
        tracks: ["algo-1/1102/gpu0/s7", "algo-1/1102/cpu"],
      },
    };
    const params = writeTimelineUrl(state);
    expect(params.get("t")).toBe("1712195495595112798_1712195495997096942");
    expect(params.get("range")).toBe("1712195495600000001_1712195495700000003");
    expect(params.get("rtracks")).toBe("algo-1/1102/gpu0/s7,algo-1/1102/cpu");
    expect(parseTimelineUrl(new URLSearchParams(params.toString()))).toEqual(state);
  });

  it("reads an event named by its store row, as insights findings link to it", () => {
    expect(parseTimelineUrl(new URLSearchParams("job=3&sel=41:@9000")).selection).toBe("41:@9000");
  });

  it("ignores what it cannot read instead of failing", () => {
    const parsed = parseTimelineUrl(
      new URLSearchParams("job=x&ranks=a,2,2,1&t=9_3&sel=12&range=5_4&rtracks=a"),
    );
    expect(parsed).toEqual({
      job: null,
      ranks: [1, 2],
      range: null,
      selection: null,
      open: null,
      area: null,
    });
    expect(parseTimelineUrl(new URLSearchParams("range=4_5")).area).toBeNull();
  });
});
