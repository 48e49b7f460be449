import { describe, expect, it } from "vitest";
import {
  MIN_SPAN_NS,
  centreOn,
  clampView,
  covers,
  focusOn,
  levelFor,
  panBy,
  planRequest,
  pxToTime,
  rulerTicks,
  timeToPx,
  zoomAt,
} from "./coords";

const bounds = { startNs: 0, endNs: 1_000_000_000 };

describe("time and pixels", () => {
  it("maps both ways", () => {
    const view = { startNs: 200, endNs: 1200 };
    expect(timeToPx(view, 500, 700)).toBe(250);
    expect(pxToTime(view, 500, 250)).toBe(700);
  });

  it("zooms around the anchor, which stays under the cursor", () => {
    const view = { startNs: 100_000_000, endNs: 300_000_000 };
    const anchor = 150_000_000;
    const zoomed = zoomAt(view, 0.5, anchor, bounds);
    expect(zoomed.endNs - zoomed.startNs).toBe(100_000_000);
    expect(timeToPx(zoomed, 1000, anchor)).toBeCloseTo(timeToPx(view, 1000, anchor));
  });

  it("never zooms below the minimum span nor far outside the data", () => {
    const tiny = zoomAt({ startNs: 500, endNs: 700 }, 0.01, 600, bounds);
    expect(tiny.endNs - tiny.startNs).toBe(MIN_SPAN_NS);
    const wide = clampView({ startNs: -5e9, endNs: 5e9 }, bounds);
    expect(wide.startNs).toBe(-50_000_000);
    expect(wide.endNs).toBe(1_050_000_000);
    expect(panBy({ startNs: 0, endNs: 1000 }, -1e12, bounds).startNs).toBe(-50_000_000);
  });

  it("focuses on an event with room around it and centres a time", () => {
    const view = focusOn(400_000, 2_000, bounds);
    expect(view).toEqual({ startNs: 399_500, endNs: 402_500 });
    expect(centreOn(view, 10_000_000, bounds)).toEqual({ startNs: 9_998_500, endNs: 10_001_500 });
  });
});

describe("ruler", () => {
  it("picks a 1-2-5 step and labels in its unit", () => {
    const { stepNs, ticks } = rulerTicks({ startNs: 0, endNs: 1_000_000_000 }, 1000, 90);
    expect(stepNs).toBe(100_000_000);
    expect(ticks.map((t) => t.label).slice(0, 3)).toEqual(["0 ms", "100 ms", "200 ms"]);
    const fine = rulerTicks({ startNs: 1_234_500, endNs: 1_235_500 }, 1000, 90);
    expect(fine.stepNs).toBe(100);
    expect(fine.ticks.map((t) => t.label).slice(0, 2)).toEqual(["1234.5 µs", "1234.6 µs"]);
    const late = rulerTicks({ startNs: 100e9, endNs: 100e9 + 10_000 }, 1000, 90);
    expect(late.ticks[0]!.label).toBe("100.000000 s");
  });
});

describe("viewport requests", () => {
  it("uses the server's level: the largest power of two not wider than a pixel", () => {
    expect(levelFor({ startNs: 0, endNs: 2_000_000 }, 1000)).toBe(10);
    expect(levelFor({ startNs: 0, endNs: 500 }, 1000)).toBe(0);
  });

  it("asks for the view plus a margin, on whole blocks, at exactly that level", () => {
    const view = { startNs: 10_000_000, endNs: 12_000_000 };
    const request = planRequest(view, 1000);
    expect(request.k).toBe(10);
    expect(request.startNs % (1024 * 256)).toBe(0);
    expect(request.startNs).toBeLessThanOrEqual(view.startNs - 500_000);
    expect(request.endNs).toBeGreaterThanOrEqual(view.endNs + 500_000);
    expect((request.endNs - request.startNs) / request.widthPx).toBe(1024);
    expect(covers(request, panBy(view, 300_000, bounds), 1000)).toBe(true);
    expect(covers(request, panBy(view, 2_000_000, bounds), 1000)).toBe(false);
    expect(covers(request, zoomAt(view, 0.4, 11_000_000, bounds), 1000)).toBe(false);
  });
});
