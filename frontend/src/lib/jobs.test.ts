import { describe, expect, it } from "vitest";
import { canChange, isPartial, parseTags, partsOutstanding, statusLabel } from "./jobs";

const finished = { status: "completed", parts_total: 4, parts_done: 3, parts_failed: 1 } as const;

describe("job progress", () => {
  it("counts parts neither done nor failed as outstanding", () => {
    expect(partsOutstanding(finished)).toBe(0);
    expect(partsOutstanding({ ...finished, parts_done: 1 })).toBe(2);
  });

  it("marks running and still-processing jobs partial", () => {
    expect(isPartial(finished)).toBe(false);
    expect(isPartial({ ...finished, status: "in_progress" })).toBe(true);
    expect(isPartial({ ...finished, status: "stopping" })).toBe(true);
    expect(isPartial({ ...finished, parts_done: 2 })).toBe(true);
  });

  it("labels statuses as the UI names them", () => {
    expect(statusLabel("in_progress")).toBe("In Progress");
    expect(statusLabel(undefined)).toBe("Unknown");
  });
});

describe("who may change a job", () => {
  const alice = { id: 2, username: "alice", is_staff: false };
  const admin = { id: 1, username: "admin", is_staff: true };

  it("lets its owner and staff change it, and nobody else", () => {
    expect(canChange({ owner: "alice" }, alice)).toBe(true);
    expect(canChange({ owner: "bob" }, alice)).toBe(false);
    expect(canChange({ owner: "bob" }, admin)).toBe(true);
    expect(canChange({ owner: null }, alice)).toBe(false);
    expect(canChange({ owner: null }, admin)).toBe(true);
    expect(canChange({ owner: "alice" }, null)).toBe(false);
  });
});

describe("parseTags", () => {
  it("splits on spaces and commas and keeps each tag once", () => {
    expect(parseTags(" nlp, a100  lr:0.1,,nlp ")).toEqual(["nlp", "a100", "lr:0.1"]);
    expect(parseTags("")).toEqual([]);
  });
});
