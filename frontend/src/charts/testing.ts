import { setPlatformAPI } from "echarts/core";
import { afterEach, beforeEach, vi } from "vitest";

/**
 * jsdom lays nothing out and has no canvas: give chart containers a size, let ECharts measure
 * text by its built-in character widths, and supply the ResizeObserver browsers have, so the
 * real charts render their SVG in unit tests. Call at the top of a describe block.
 */
export function withChartLayout(widthPx = 600, heightPx = 240) {
  beforeEach(() => {
    setPlatformAPI({ createCanvas: () => null as unknown as HTMLCanvasElement });
    vi.stubGlobal(
      "ResizeObserver",
      class {
        observe() {}
        disconnect() {}
      },
    );
    vi.spyOn(HTMLElement.prototype, "clientWidth", "get").mockReturnValue(widthPx);
    vi.spyOn(HTMLElement.prototype, "clientHeight", "get").mockReturnValue(heightPx);
  });
  afterEach(() => vi.restoreAllMocks());
}
