import { describe, expect, it } from "vitest";
import { LABEL_FONT, LABEL_MIN_PX, TextFitter } from "./text";
import { recordingContext } from "./testing";

// The recording context measures 6 px a character.
describe("TextFitter", () => {
  it("keeps a text that fits, and cuts one that does not to a prefix with an ellipsis", () => {
    const { ctx } = recordingContext();
    const text = new TextFitter();
    expect(text.fit(ctx, "aten::mm", 48)).toBe("aten::mm");
    // 60 px of a 132 px (22-character) text: 10 characters' room, one kept for the ellipsis.
    expect(text.fit(ctx, "ampere_sgemm_128x64_nn", 60)).toBe("ampere_sg…");
    expect(text.fit(ctx, "ampere_sgemm_128x64_nn", 20)).toBe("");
  });

  it("measures each text once, in the label font", () => {
    const { ctx, measured } = recordingContext();
    const text = new TextFitter();
    for (const room of [10, 40, 400]) text.fit(ctx, "ProfilerStep#3", room);
    text.fit(ctx, "forward", 400);
    expect(measured).toEqual(["ProfilerStep#3", "forward"]);
    expect(ctx.font).toBe(LABEL_FONT);
  });

  it("labels an item from its left edge, padded, and leaves narrow items bare", () => {
    const { ctx, calls } = recordingContext();
    const text = new TextFitter();
    text.label(ctx, "conv", 100, 100 + LABEL_MIN_PX - 1, 9);
    text.label(ctx, "conv", 100, 160, 9);
    text.label(ctx, "convolution_backward", 0, 60, 27);
    expect(calls.filter((c) => c.op === "fillText").map((c) => c.args)).toEqual([
      ["conv", 103, 9],
      ["convolution_backward".slice(0, 8) + "…", 3, 27],
    ]);
  });
});
