import { describe, expect, it } from "vitest";
import { compareLink, safeNext } from "./navigation";

describe("safeNext", () => {
  it("keeps paths inside the app", () => {
    expect(safeNext("/info?x=1")).toBe("/info?x=1");
  });

  it("refuses other sites, the login page itself and nothing", () => {
    expect(safeNext("//evil.example/")).toBe("/profiles");
    expect(safeNext("https://evil.example/")).toBe("/profiles");
    expect(safeNext("/login?next=/x")).toBe("/profiles");
    expect(safeNext(null)).toBe("/profiles");
  });
});

describe("compareLink", () => {
  it("puts the baseline in a and the compared run in b", () => {
    expect(compareLink(3, 12)).toBe("/compare?a=3&b=12");
  });
});
