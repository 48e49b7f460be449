import { describe, expect, it } from "vitest";

import { OTHER_COLOUR, PALETTE, colourFor } from "./colour";

describe("colourFor", () => {
  it("gives a name one palette colour, never the grey kept for Other", () => {
    const name = "void at::native::vectorized_elementwise_kernel<4>()";
    expect(colourFor(name)).toBe(colourFor(name));
    expect(PALETTE).toContain(colourFor(name));
    expect(PALETTE).not.toContain(OTHER_COLOUR);
  });

  it("spreads names over the palette", () => {
    const colours = new Set(Array.from({ length: 200 }, (_, i) => colourFor(`kernel_${i}`)));
    expect(colours.size).toBe(PALETTE.length);
  });
});
