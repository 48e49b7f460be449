import { describe, expect, it } from "vitest";
import { MATCH_FILL, nameFill } from "../../canvas/colour";
import { recordingContext } from "../../canvas/testing";
import { layoutFlame } from "./flame";
import { FlameRenderer, ROW_PX } from "./flameRenderer";
import { frames, names } from "./testing";

const style = { names, nameOf: (f: number) => frames.name[f]!, selected: null };

function draw(matches: number[], widthPx = 1000) {
  const { ctx, calls } = recordingContext();
  new FlameRenderer().render(ctx, layoutFlame(frames), widthPx, {
    ...style,
    matches: new Set(matches),
  });
  return calls;
}

describe("FlameRenderer", () => {
  it("fills each frame by its name's colour, one path per colour", () => {
    const calls = draw([]);
    const fills = calls.filter((c) => c.op === "fill").map((c) => c.fillStyle);
    // Frames are laid out step, forward, conv, backward, other; "backward" and "other" share
    // a colour of the palette, so one path fills both.
    expect(nameFill("backward")).toBe(nameFill("other"));
    expect(fills).toEqual(["step", "forward", "aten::conv", "backward"].map((n) => nameFill(n)));
    const shared = calls.filter((c) => c.op === "rect" && c.fillStyle === nameFill("other"));
    // Fractions of the width carry float error: compared to a micro-pixel.
    expect(shared.map((c) => c.args.map((v) => Math.round(Number(v) * 1e6) / 1e6))).toEqual([
      [600, ROW_PX, 299, ROW_PX - 1],
      [900, 0, 99, ROW_PX - 1],
    ]);
    const forward = calls.find((c) => c.op === "rect" && c.fillStyle === nameFill("forward"));
    // forward spans 60 of the 100 ns, after nothing at depth 1: 600 px less the 1 px gap.
    expect(forward!.args).toEqual([0, ROW_PX, 599, ROW_PX - 1]);
  });

  it("fades what a search does not match and draws the matches in the match colour", () => {
    const fills = draw([3])
      .filter((c) => c.op === "fill")
      .map((c) => c.fillStyle);
    expect(fills).toEqual([
      nameFill("step", true),
      nameFill("forward", true),
      MATCH_FILL,
      nameFill("backward", true),
    ]);
  });

  it("labels the frames wide enough, cut to their width", () => {
    const labels = draw([], 200)
      .filter((c) => c.op === "fillText")
      .map((c) => c.args[0]);
    // 200 px, less each frame's 1 px gap: step 179, forward 119, conv 79, backward 59, other
    // 19 (too narrow for a label).
    expect(labels).toEqual(["step", "forward", "aten::conv", "backward"]);
    const narrow = draw([], 100)
      .filter((c) => c.op === "fillText")
      .map((c) => c.args[0]);
    // 100 px: conv has 39 px, 33 inside its padding, for 4 characters and the ellipsis;
    // backward's 29 px take no label.
    expect(narrow).toEqual(["step", "forward", "aten…"]);
  });
});
