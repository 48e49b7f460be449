import { describe, expect, it } from "vitest";
import { missingRanksNote, rankRanges } from "./ranks";

describe("rankRanges", () => {
  it("joins ranges and single ranks", () => {
    expect(rankRanges([[1, 127]])).toBe("ranks 1–127");
    expect(rankRanges([[1, 1]])).toBe("rank 1");
    expect(
      rankRanges([
        [1, 1],
        [3, 5],
      ]),
    ).toBe("ranks 1, 3–5");
  });
});

describe("missingRanksNote", () => {
  it("says how many ranks arrived and which are missing", () => {
    expect(missingRanksNote({ ranks: [0], world_size: 128, missing_ranks: [[1, 127]] })).toBe(
      "1 of 128 ranks · ranks 1–127 missing",
    );
    expect(missingRanksNote({ ranks: [0], world_size: 2, missing_ranks: [[1, 1]] })).toBe(
      "1 of 2 ranks · rank 1 missing",
    );
  });

  it("says nothing when every rank arrived or no trace gives the world size", () => {
    expect(missingRanksNote({ ranks: [0, 1], world_size: 2, missing_ranks: [] })).toBeNull();
    expect(missingRanksNote({ ranks: [0], world_size: null, missing_ranks: [] })).toBeNull();
  });
});
