import { describe, expect, it } from "vitest";
import {
  hasFilters,
  nextOrdering,
  readListState,
  toJobListQuery,
  writeListState,
} from "./listQuery";

describe("list state in the URL", () => {
  it("round-trips every filter", () => {
    const state = {
      search: "resnet",
      statuses: ["completed", "failed"] as const,
      fromDay: "2025-01-02",
      toDay: "2025-01-31",
      mine: true,
      tags: ["nlp", "lr:0.1"],
      ordering: "name",
      page: 3,
    };
    const params = writeListState({ ...state, statuses: [...state.statuses] });
    expect(params.toString()).toBe(
      "q=resnet&status=completed&status=failed&from=2025-01-02&to=2025-01-31&mine=1" +
        "&tag=nlp&tag=lr%3A0.1&sort=name&page=3",
    );
    expect(readListState(params)).toEqual({ ...state, statuses: [...state.statuses] });
  });

  it("keeps defaults out of the URL", () => {
    const state = readListState(new URLSearchParams());
    expect(state).toEqual({
      search: "",
      statuses: [],
      fromDay: "",
      toDay: "",
      mine: false,
      tags: [],
      ordering: "-created_at",
      page: 1,
    });
    expect(writeListState(state).toString()).toBe("");
  });

  it("ignores values a person could not have chosen", () => {
    const state = readListState(
      new URLSearchParams("status=bogus&from=yesterday&page=-2&mine=yes&tag=a%20b&tag=ok&tag=ok"),
    );
    expect(state.statuses).toEqual([]);
    expect(state.fromDay).toBe("");
    expect(state.page).toBe(1);
    expect(state.mine).toBe(false);
    expect(state.tags).toEqual(["ok"]);
  });
});

describe("toJobListQuery", () => {
  it("sends only the filters that are set", () => {
    const query = toJobListQuery(readListState(new URLSearchParams("q=%20bert%20&page=2")));
    expect(query).toEqual({ ordering: "-created_at", page: 2, search: "bert" });
  });

  it("asks for my jobs and for jobs with every chosen tag", () => {
    const query = toJobListQuery(readListState(new URLSearchParams("mine=1&tag=nlp&tag=a100")));
    expect(query).toEqual({ ordering: "-created_at", page: 1, mine: true, tag: ["nlp", "a100"] });
    expect(hasFilters(readListState(new URLSearchParams("tag=nlp")))).toBe(true);
    expect(hasFilters(readListState(new URLSearchParams("mine=1")))).toBe(true);
    expect(hasFilters(readListState(new URLSearchParams("sort=name")))).toBe(false);
  });

  it("turns days into an inclusive local time range", () => {
    const query = toJobListQuery(
      readListState(new URLSearchParams("from=2025-05-01&to=2025-05-01")),
    );
    const after = new Date(query.created_after!);
    const before = new Date(query.created_before!);
    expect(before.getTime() - after.getTime()).toBe(24 * 3600_000 - 1);
    expect(after.getHours()).toBe(0);
  });
});

describe("nextOrdering", () => {
  it("flips the sorted column and starts new ones sensibly", () => {
    expect(nextOrdering("-created_at", "created_at")).toBe("created_at");
    expect(nextOrdering("created_at", "created_at")).toBe("-created_at");
    expect(nextOrdering("-created_at", "name")).toBe("name");
    expect(nextOrdering("name", "name")).toBe("-name");
    expect(nextOrdering("name", "size_bytes")).toBe("-size_bytes");
  });
});
