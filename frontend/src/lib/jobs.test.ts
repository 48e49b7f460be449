import { describe, expect, it } from "vitest";
import { isPartial, partsOutstanding, statusLabel } from "./jobs";

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
