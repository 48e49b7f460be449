import { describe, expect, it } from "vitest";
import { compareLink } from "../../lib/navigation";
import { readPair, signedDuration } from "./compareView";

describe("comparison links", () => {
  it("reads the two job ids of a shareable link", () => {
    expect(readPair(new URLSearchParams("a=3&b=12"))).toEqual({ a: 3, b: 12 });
    expect(readPair(new URLSearchParams("a=x"))).toEqual({ a: null, b: null });
    expect(readPair(new URLSearchParams(compareLink(3, 12).split("?")[1]))).toEqual({ a: 3, b: 12 });
  });

  it("signs time changes", () => {
    expect(signedDuration(1_500_000)).toBe("+1.5 ms");
    expect(signedDuration(-20_000)).toBe("−20 µs");
    expect(signedDuration(0)).toBe("0 ns");
  });
});
