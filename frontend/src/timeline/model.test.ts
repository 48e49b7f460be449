import { describe, expect, it } from "vitest";
import { absoluteNs, decodeViewport, nsBetween } from "./model";
import { samplePayload, sampleTracks as tracks } from "./testdata/fixture";

// A real payload: the server's answer for the whole ROCm sample trace (115 events), 400 px wide.
const payload = samplePayload();

describe("decodeViewport", () => {
  const data = decodeViewport(payload, tracks.origin_ns);

  it("counts every event of the trace once, one by one or in a block", () => {
    let total = 0;
    for (const track of data.tracks.values()) {
      if (track.type !== "events") continue;
      for (const row of track.rows) {
        total += row.events[1];
        for (let i = row.blocks[0]; i < row.blocks[0] + row.blocks[1]; i++)
          total += data.blocks.count[i]!;
      }
    }
    expect(total).toBe(115);
  });

  it("puts times on the job's origin and names in a table", () => {
    const stream = data.tracks.get("algo-1/597913/gpu2/s0");
    expect(stream?.type).toBe("events");
    if (stream?.type !== "events") return;
    const [offset, count] = stream.rows[0]!.events;
    expect(count).toBeGreaterThan(0);
    expect(data.events.start[offset]).toBeGreaterThanOrEqual(0);
    expect(data.names[data.events.name[offset]!]).toMatch(/\w/);
    expect(data.grid.k).toBe(14);
    expect(data.strip.count).toBeLessThanOrEqual(400);
  });

  it("reads counters, aggregates and launch→run pairs", () => {
    const util = data.tracks.get("algo-1/597913/gpu2/util");
    expect(util?.type).toBe("counter");
    const aggregate = data.tracks.get("algo-1/597913/cpu");
    expect(aggregate).toMatchObject({ type: "aggregate", lanes: 2 });
    expect(data.flows.count).toBe(4);
    for (let i = 0; i < data.flows.count; i++) {
      expect(data.flows.runStart[i]).toBeGreaterThanOrEqual(data.flows.launchStart[i]!);
      expect(data.flows.lanes[data.flows.runLane[i]!]).toBe("algo-1/597913/gpu2/s0");
      expect(data.names[data.flows.launchName[i]!]).toMatch(/^hip/);
    }
  });

  it("refuses something that is not a payload", () => {
    expect(() => decodeViewport(new ArrayBuffer(16), tracks.origin_ns)).toThrow(
      /not a timeline viewport/,
    );
  });
});

describe("nanosecond strings", () => {
  it("keeps nanoseconds that a double would round", () => {
    expect(nsBetween("1739836029603018756", "1739836029603018757")).toBe(1);
    expect(absoluteNs("1739836029603018756", 1_000_001)).toBe("1739836029604018757");
  });
});
