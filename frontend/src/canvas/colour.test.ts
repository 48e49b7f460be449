import { describe, expect, it } from "vitest";
import { colourFor } from "../lib/colour";
import { FADED_ALPHA, nameFill, withAlpha } from "./colour";

describe("canvas fills", () => {
  it("colour an item by the app's one name rule, and fade it as one rgba style", () => {
    expect(nameFill("aten::mm")).toBe(colourFor("aten::mm"));
    expect(withAlpha("#4e79a7", 0.3)).toBe("rgba(78, 121, 167, 0.3)");
    expect(nameFill("aten::mm", true)).toBe(withAlpha(colourFor("aten::mm"), FADED_ALPHA));
  });
});
