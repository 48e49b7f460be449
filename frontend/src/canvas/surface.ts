/**
 * Sizes a canvas for ``widthPx`` × ``heightPx`` CSS pixels at the screen's pixel ratio and
 * scales its context so that drawing code works in CSS pixels. Resizing clears a canvas, so
 * the backing store is only resized when its size changes.
 */
export function fitCanvas(
  canvas: HTMLCanvasElement,
  ctx: CanvasRenderingContext2D,
  widthPx: number,
  heightPx: number,
) {
  const ratio = window.devicePixelRatio || 1;
  const width = Math.round(widthPx * ratio);
  const height = Math.round(heightPx * ratio);
  if (canvas.width !== width) canvas.width = width;
  if (canvas.height !== height) canvas.height = height;
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
}
