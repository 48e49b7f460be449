import { describe, expect, it } from "vitest";
import { addressedPath, jobIdOf, jobPath } from "./jobPath";

describe("jobPath", () => {
  it("names the job and the page, with the query and anchor given", () => {
    expect(jobPath(7, "dashboard")).toBe("/jobs/7/dashboard");
    expect(jobPath(7, "timeline", "?t=1_2&ranks=0")).toBe("/jobs/7/timeline?t=1_2&ranks=0");
    expect(jobPath(7, "insights", "", "#rule-PageableCopies")).toBe(
      "/jobs/7/insights#rule-PageableCopies",
    );
  });

  it("reads only a whole number as a job id", () => {
    expect(jobIdOf("12")).toBe(12);
    expect(jobIdOf("12x")).toBeNull();
    expect(jobIdOf(undefined)).toBeNull();
  });

  it("moves an old ?job=N link onto the job's address, keeping the rest", () => {
    expect(addressedPath("timeline", "?job=4&t=1_2&sel=3:7")).toBe(
      "/jobs/4/timeline?t=1_2&sel=3%3A7",
    );
    expect(addressedPath("dashboard", "?job=11", "#top")).toBe("/jobs/11/dashboard#top");
    expect(addressedPath("dashboard", "?t=1_2")).toBeNull();
  });
});
