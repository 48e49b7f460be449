/**
 * Draws the timeline on a 2D canvas: the ruler and step band, then each visible row (events,
 * merged blocks, counters, aggregates), then step guides, the selection and launch→run arrows.
 * A plain class with no React and no fetching; anything off-screen is culled, rectangles are
 * filled in one path per colour and labels fitted with the canvas kit (``src/canvas``).
 */
import { type View, rulerTicks, timeToPx } from "./coords";
import {
  COUNTER_PX,
  HEADER_PX,
  LANE_ROW_PX,
  type Layout,
  type LayoutRow,
  depthCentre,
  visibleRows,
} from "./layout";
import { nameFill } from "../canvas/colour";
import { RectBatch } from "../canvas/rects";
import { TextFitter } from "../canvas/text";
import type { Step, ViewportData } from "./model";

export type Viewport = { view: View; widthPx: number; heightPx: number; scrollTop: number };

/** An event placed by lane and depth (what selections and arrows point at). */
export type Placed = { track: string; depth: number; startNs: number; durNs: number };

export type Scene = {
  data: ViewportData | null;
  steps: Step[];
  selection: Placed | null;
  arrows: { from: Placed; to: Placed }[];
  /** The range selection (times relative to the origin) and the tracks it covers. */
  area?: { startNs: number; endNs: number; tracks: string[] } | null;
  /** Events outlined in the range selection (a row picked in its table). */
  highlights?: Placed[];
};

const RULER_PX = 24;
const ARROW = "#00a6c8";

export class TimelineRenderer {
  private readonly text = new TextFitter();
  private readonly rects = new RectBatch();
  private readonly faint = new RectBatch();

  render(ctx: CanvasRenderingContext2D, layout: Layout, viewport: Viewport, scene: Scene) {
    const { widthPx, heightPx, scrollTop } = viewport;
    ctx.clearRect(0, 0, widthPx, heightPx);
    this.text.prepare(ctx);
    const rowsTop = HEADER_PX;
    const rows = visibleRows(layout, scrollTop, heightPx - rowsTop);
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, rowsTop, widthPx, heightPx - rowsTop);
    ctx.clip();
    ctx.translate(0, rowsTop - scrollTop);
    rows.forEach((row) => this.drawRow(ctx, row, viewport, scene.data));
    this.faint.fill(ctx);
    this.rects.fill(ctx);
    rows.forEach((row) => this.drawLabels(ctx, row, viewport, scene.data));
    this.drawStepGuides(ctx, viewport, scene.steps, scrollTop, layout.height);
    if (scene.area) this.drawArea(ctx, layout, viewport, scene.area);
    scene.highlights?.forEach((item) => this.drawHighlight(ctx, layout, viewport, item));
    if (scene.selection) this.drawSelection(ctx, layout, viewport, scene.selection);
    scene.arrows.forEach((arrow) => this.drawArrow(ctx, layout, viewport, arrow.from, arrow.to));
    ctx.restore();
    this.drawHeader(ctx, viewport, scene.steps);
  }

  private drawRow(
    ctx: CanvasRenderingContext2D,
    row: LayoutRow,
    viewport: Viewport,
    data: ViewportData | null,
  ) {
    ctx.fillStyle = row.level % 2 ? "#fbfcfd" : "#f6f8fb";
    ctx.fillRect(0, row.y, viewport.widthPx, row.height);
    ctx.fillStyle = "#e3e7ee";
    ctx.fillRect(0, row.y + row.height - 1, viewport.widthPx, 1);
    const track = data?.tracks.get(row.node.id);
    if (!data || !track) return;
    if (track.type === "events") this.drawLane(row, viewport, data, track.rows);
    else if (track.type === "counter")
      this.drawCounter(ctx, row, viewport, data, track.offset, String(row.node.info?.unit ?? ""));
    else this.drawAggregate(row, viewport, data, track.offset, track.lanes);
  }

  private drawLane(
    row: LayoutRow,
    viewport: Viewport,
    data: ViewportData,
    slices: { depth: number; events: [number, number]; blocks: [number, number] }[],
  ) {
    const { view, widthPx } = viewport;
    const ev = data.events;
    const bl = data.blocks;
    for (const slice of slices) {
      const y = row.y + 2 + slice.depth * LANE_ROW_PX;
      const h = LANE_ROW_PX - 2;
      const [bo, bn] = slice.blocks;
      for (let i = bo; i < bo + bn; i++) {
        const x0 = timeToPx(view, widthPx, bl.start[i]!);
        const x1 = timeToPx(view, widthPx, bl.end[i]!);
        if (x1 < 0 || x0 > widthPx) continue;
        const density = Math.min(bl.busy[i]! / Math.max(bl.end[i]! - bl.start[i]!, 1), 1);
        // Merged blocks are drawn lighter the less of their span their events fill.
        const shade = density > 0.5 ? nameFill(data.names[bl.name[i]!] ?? "") : "#9aa6b8";
        const batch = density > 0.5 ? this.rects : this.faint;
        batch.add(
          shade,
          Math.max(x0, -1),
          y + (density > 0.5 ? 0 : h / 4),
          Math.max(Math.min(x1, widthPx + 1) - Math.max(x0, -1), 1),
          density > 0.5 ? h : h / 2,
        );
      }
      const [eo, en] = slice.events;
      for (let i = eo; i < eo + en; i++) {
        const x0 = timeToPx(view, widthPx, ev.start[i]!);
        const x1 = timeToPx(view, widthPx, ev.start[i]! + ev.dur[i]!);
        if (x1 < 0 || x0 > widthPx) continue;
        const left = Math.max(x0, -1);
        const w = Math.max(Math.min(x1, widthPx + 1) - left, 1);
        this.rects.add(nameFill(data.names[ev.name[i]!] ?? ""), left, y, w > 2 ? w - 0.5 : w, h);
      }
    }
  }

  private drawLabels(
    ctx: CanvasRenderingContext2D,
    row: LayoutRow,
    viewport: Viewport,
    data: ViewportData | null,
  ) {
    const track = data?.tracks.get(row.node.id);
    if (!data || track?.type !== "events") return;
    const { view, widthPx } = viewport;
    const ev = data.events;
    ctx.fillStyle = "#ffffff";
    for (const slice of track.rows) {
      const y = row.y + 2 + slice.depth * LANE_ROW_PX + (LANE_ROW_PX - 2) / 2;
      const [eo, en] = slice.events;
      for (let i = eo; i < eo + en; i++) {
        const x0 = Math.max(timeToPx(view, widthPx, ev.start[i]!), 0);
        const x1 = Math.min(timeToPx(view, widthPx, ev.start[i]! + ev.dur[i]!), widthPx);
        this.text.label(ctx, data.names[ev.name[i]!] ?? "", x0, x1, y);
      }
    }
  }

  private drawCounter(
    ctx: CanvasRenderingContext2D,
    row: LayoutRow,
    viewport: Viewport,
    data: ViewportData,
    offset: number,
    unit: string,
  ) {
    const { view, widthPx } = viewport;
    const grid = data.strip;
    const bucketNs = 2 ** grid.k;
    const { mean, low, high } = data.counters;
    let top = unit === "%" ? 100 : 0;
    if (unit !== "%")
      for (let b = 0; b < grid.count; b++) if (high[offset + b]! > top) top = high[offset + b]!;
    if (!(top > 0)) return;
    const base = row.y + COUNTER_PX - 3;
    const scale = (COUNTER_PX - 6) / top;
    const xs: number[] = [];
    const ys: number[] = [];
    ctx.fillStyle = "rgba(78, 121, 167, 0.25)";
    ctx.beginPath();
    for (let b = 0; b < grid.count; b++) {
      const t0 = grid.startNs + b * bucketNs;
      const x0 = timeToPx(view, widthPx, t0);
      const x1 = timeToPx(view, widthPx, t0 + bucketNs);
      const m = mean[offset + b]!;
      if (x1 < 0 || x0 > widthPx || Number.isNaN(m)) {
        xs.push(NaN);
        ys.push(NaN);
        continue;
      }
      const lo = low[offset + b]!;
      const hi = high[offset + b]!;
      ctx.rect(x0, base - hi * scale, Math.max(x1 - x0, 0.5), Math.max((hi - lo) * scale, 0.5));
      xs.push(x0, x1);
      ys.push(base - m * scale, base - m * scale);
    }
    ctx.fill();
    // The mean as a line, broken where there is no data.
    ctx.strokeStyle = "#2f5f98";
    ctx.lineWidth = 1;
    ctx.beginPath();
    let drawing = false;
    for (let i = 0; i < xs.length; i++) {
      if (Number.isNaN(xs[i]!)) {
        drawing = false;
        continue;
      }
      if (drawing) ctx.lineTo(xs[i]!, ys[i]!);
      else ctx.moveTo(xs[i]!, ys[i]!);
      drawing = true;
    }
    ctx.stroke();
  }

  private drawAggregate(
    row: LayoutRow,
    viewport: Viewport,
    data: ViewportData,
    offset: number,
    lanes: number,
  ) {
    const { view, widthPx } = viewport;
    const grid = data.strip;
    const bucketNs = 2 ** grid.k;
    const { count, busy } = data.aggregates;
    for (let b = 0; b < grid.count; b++) {
      if (!count[offset + b] && !busy[offset + b]) continue;
      const t0 = grid.startNs + b * bucketNs;
      const x0 = timeToPx(view, widthPx, t0);
      const x1 = timeToPx(view, widthPx, t0 + bucketNs);
      if (x1 < 0 || x0 > widthPx) continue;
      const occupancy = Math.min(busy[offset + b]! / (bucketNs * Math.max(lanes, 1)), 1);
      // Eight shades are enough to read and keep the number of fill styles small.
      const level = Math.max(1, Math.round(occupancy * 8));
      this.rects.add(
        `rgba(47, 95, 152, ${(0.15 + (0.85 * level) / 8).toFixed(3)})`,
        x0,
        row.y + 4,
        Math.max(x1 - x0, 1),
        row.height - 8,
      );
    }
  }

  private drawStepGuides(
    ctx: CanvasRenderingContext2D,
    viewport: Viewport,
    steps: Step[],
    scrollTop: number,
    contentHeight: number,
  ) {
    const { view, widthPx, heightPx } = viewport;
    ctx.fillStyle = "rgba(122, 82, 0, 0.35)";
    const bottom = Math.min(contentHeight, scrollTop + heightPx);
    for (const step of steps) {
      const x = timeToPx(view, widthPx, step.startNs);
      if (x >= 0 && x <= widthPx) ctx.fillRect(Math.round(x), scrollTop, 1, bottom - scrollTop);
    }
  }

  private placed(layout: Layout, viewport: Viewport, item: Placed) {
    const row = layout.shownAs.get(item.track);
    if (!row) return null;
    const x0 = timeToPx(viewport.view, viewport.widthPx, item.startNs);
    const x1 = timeToPx(viewport.view, viewport.widthPx, item.startNs + item.durNs);
    return { row, x0, x1, y: depthCentre(row, row.node.id === item.track ? item.depth : 0) };
  }

  private drawSelection(
    ctx: CanvasRenderingContext2D,
    layout: Layout,
    viewport: Viewport,
    selection: Placed,
  ) {
    const at = this.placed(layout, viewport, selection);
    if (!at) return;
    ctx.strokeStyle = "#111827";
    ctx.lineWidth = 2;
    ctx.strokeRect(at.x0 - 1, at.y - LANE_ROW_PX / 2, Math.max(at.x1 - at.x0, 1) + 2, LANE_ROW_PX);
  }

  private drawArea(
    ctx: CanvasRenderingContext2D,
    layout: Layout,
    viewport: Viewport,
    area: NonNullable<Scene["area"]>,
  ) {
    const x0 = Math.max(timeToPx(viewport.view, viewport.widthPx, area.startNs), -1);
    const x1 = Math.min(
      timeToPx(viewport.view, viewport.widthPx, area.endNs),
      viewport.widthPx + 1,
    );
    if (x1 < 0 || x0 > viewport.widthPx) return;
    const w = Math.max(x1 - x0, 1);
    ctx.fillStyle = "rgba(37, 99, 235, 0.14)";
    ctx.strokeStyle = "rgba(37, 99, 235, 0.9)";
    ctx.lineWidth = 1;
    for (const id of area.tracks) {
      const row = layout.byId.get(id);
      if (!row) continue;
      ctx.fillRect(x0, row.y, w, row.height);
    }
    ctx.beginPath();
    ctx.moveTo(x0 + 0.5, 0);
    ctx.lineTo(x0 + 0.5, layout.height);
    ctx.moveTo(x1 - 0.5, 0);
    ctx.lineTo(x1 - 0.5, layout.height);
    ctx.stroke();
  }

  private drawHighlight(
    ctx: CanvasRenderingContext2D,
    layout: Layout,
    viewport: Viewport,
    item: Placed,
  ) {
    const at = this.placed(layout, viewport, item);
    if (!at || at.x1 < 0 || at.x0 > viewport.widthPx) return;
    ctx.strokeStyle = "#f59e0b";
    ctx.lineWidth = 2;
    ctx.strokeRect(at.x0 - 1, at.y - LANE_ROW_PX / 2, Math.max(at.x1 - at.x0, 1) + 2, LANE_ROW_PX);
  }

  private drawArrow(
    ctx: CanvasRenderingContext2D,
    layout: Layout,
    viewport: Viewport,
    from: Placed,
    to: Placed,
  ) {
    const a = this.placed(layout, viewport, from);
    const b = this.placed(layout, viewport, to);
    if (!a || !b) return;
    const x1 = a.x0;
    const y1 = a.y + (b.y > a.y ? LANE_ROW_PX / 2 : -LANE_ROW_PX / 2);
    const x2 = b.x0;
    const y2 = b.y + (b.y > a.y ? -LANE_ROW_PX / 2 : LANE_ROW_PX / 2);
    ctx.strokeStyle = ARROW;
    ctx.fillStyle = ARROW;
    ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.moveTo(x1, y1);
    const bend = (y2 - y1) / 2;
    ctx.bezierCurveTo(x1, y1 + bend, x2, y2 - bend, x2, y2);
    ctx.stroke();
    const dir = Math.sign(y2 - y1) || 1;
    ctx.beginPath();
    ctx.moveTo(x2, y2);
    ctx.lineTo(x2 - 5, y2 - 8 * dir);
    ctx.lineTo(x2 + 5, y2 - 8 * dir);
    ctx.closePath();
    ctx.fill();
    for (const end of [a, b]) {
      ctx.strokeRect(
        end.x0 - 1,
        end.y - LANE_ROW_PX / 2,
        Math.max(end.x1 - end.x0, 1) + 2,
        LANE_ROW_PX,
      );
    }
  }

  private drawHeader(ctx: CanvasRenderingContext2D, viewport: Viewport, steps: Step[]) {
    const { view, widthPx } = viewport;
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, widthPx, HEADER_PX);
    ctx.fillStyle = "#d9dee6";
    ctx.fillRect(0, RULER_PX - 1, widthPx, 1);
    ctx.fillRect(0, HEADER_PX - 1, widthPx, 1);
    ctx.fillStyle = "#1d2330";
    ctx.textBaseline = "middle";
    for (const tick of rulerTicks(view, widthPx).ticks) {
      ctx.fillRect(Math.round(tick.px), RULER_PX - 7, 1, 6);
      ctx.fillText(tick.label, tick.px + 3, RULER_PX / 2 - 2);
    }
    // Steps: alternating bands with their names, so a step like "step_232" reads at a glance.
    const top = RULER_PX + 1;
    const h = HEADER_PX - RULER_PX - 3;
    steps.forEach((step, i) => {
      const x0 = timeToPx(view, widthPx, step.startNs);
      const x1 = timeToPx(view, widthPx, step.startNs + step.durNs);
      if (x1 < 0 || x0 > widthPx) return;
      ctx.fillStyle = i % 2 ? "#ffe9a8" : "#fff4d6";
      ctx.fillRect(x0, top, Math.max(x1 - x0, 1), h);
      ctx.fillStyle = "#7a5200";
      this.text.label(ctx, step.name, Math.max(x0, 0), Math.min(x1, widthPx), top + h / 2);
    });
  }
}
