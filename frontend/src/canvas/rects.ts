/**
 * Rectangles collected by fill style and filled in one path per style: a canvas pays for each
 * change of style and each fill, not for each rectangle in a path.
 */
export class RectBatch {
  private readonly byStyle = new Map<string, number[]>();

  add(fillStyle: string, x: number, y: number, w: number, h: number) {
    let list = this.byStyle.get(fillStyle);
    if (!list) this.byStyle.set(fillStyle, (list = []));
    list.push(x, y, w, h);
  }

  /** Fills what was added, in the order its styles first came, and empties the batch. */
  fill(ctx: CanvasRenderingContext2D) {
    for (const [fillStyle, r] of this.byStyle) {
      ctx.fillStyle = fillStyle;
      ctx.beginPath();
      for (let i = 0; i < r.length; i += 4) ctx.rect(r[i]!, r[i + 1]!, r[i + 2]!, r[i + 3]!);
      ctx.fill();
    }
    this.byStyle.clear();
  }
}
