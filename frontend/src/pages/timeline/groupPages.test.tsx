import { fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { useState } from "react";
import { describe, expect, it } from "vitest";
import { layoutTracks } from "../../timeline/layout";
import type { TrackNode } from "../../timeline/model";
import { FakeApi } from "../../test/fakeApi";
import { TrackTree } from "./TrackTree";
import { GROUP_PAGE, MORE_KIND, unreadOpenGroups, withPages } from "./groupPages";
import { useGroupPages } from "./useGroupPages";

const THREADS = 620;
const GROUP = "algo-1/1/cpu";

const thread = (tid: number): TrackNode => ({
  id: `${GROUP}/${tid}`,
  label: `thread ${tid}`,
  kind: "thread",
  data: "events",
  rows: 1,
  events: 1,
  info: { tid },
});

/** The tree of one process of 620 threads, as the server answers it: the threads collapsed. */
const roots: TrackNode[] = [
  {
    id: "algo-1",
    label: "algo-1",
    kind: "node",
    data: null,
    children: [
      {
        id: "algo-1/cpu",
        label: "CPU",
        kind: "cpu",
        data: null,
        children: [
          {
            id: "algo-1/1",
            label: "HOST-0 PID-1",
            kind: "process",
            data: null,
            info: { ranks: [0], pid: 1 },
            children: [
              {
                id: GROUP,
                label: "CPU threads",
                kind: "threads",
                data: null,
                children_count: THREADS,
                lanes: THREADS,
                events: THREADS,
              },
            ],
          },
        ],
      },
    ],
  },
];

describe("withPages", () => {
  it("adds the pages read to their group, and a more row while some are left", () => {
    const pages = new Map([[GROUP, [thread(1), thread(2)]]]);
    const [node] = withPages(roots, pages);
    const group = node!.children![0]!.children![0]!.children![0]!;
    expect(group.children!.map((c) => c.id)).toEqual([`${GROUP}/1`, `${GROUP}/2`, `${GROUP}#more`]);
    expect(group.children![2]!.kind).toBe(MORE_KIND);
    expect(group.children![2]!.info).toEqual({ group: GROUP, shown: 2, count: THREADS });
    const all = Array.from({ length: THREADS }, (_, i) => thread(i + 1));
    const [whole] = withPages(roots, new Map([[GROUP, all]]));
    expect(whole!.children![0]!.children![0]!.children![0]!.children).toHaveLength(THREADS);
  });

  it("keeps the tree as it is without pages", () => {
    expect(withPages(roots, new Map())).toBe(roots);
  });

  it("finds the open groups whose first page is not read", () => {
    const open = new Set(["algo-1", "algo-1/cpu", "algo-1/1", GROUP]);
    expect(unreadOpenGroups(roots, open)).toEqual([GROUP]);
    expect(unreadOpenGroups(roots, new Set(["algo-1", GROUP]))).toEqual([]); // not shown
    expect(unreadOpenGroups(withPages(roots, new Map([[GROUP, [thread(1)]]])), open)).toEqual([]);
  });
});

function Tree({ open }: { open: string[] }) {
  const [expanded, setExpanded] = useState<Set<string>>(() => new Set(open));
  const groups = useGroupPages(7, roots, expanded);
  const toggle = (id: string) =>
    setExpanded((before) => {
      const next = new Set(before);
      if (!next.delete(id)) next.add(id);
      return next;
    });
  return (
    <TrackTree
      layout={layoutTracks(groups.roots, expanded)}
      onToggle={toggle}
      onShowMore={groups.showMore}
      onScroll={() => {}}
      onShowShortcuts={() => {}}
    />
  );
}

function serveThreads(): FakeApi {
  return new FakeApi().on("GET /api/jobs/7/timeline/tracks/children/", (_request, url) => {
    const offset = Number(url.searchParams.get("offset"));
    const limit = Number(url.searchParams.get("limit"));
    const tids = Array.from({ length: THREADS }, (_, i) => i + 1).slice(offset, offset + limit);
    return {
      status: 200,
      body: {
        group: url.searchParams.get("group"),
        count: THREADS,
        offset,
        children: tids.map(thread),
      },
    };
  });
}

const threadRows = () => screen.queryAllByText(/^thread \d+$/).map((label) => label.textContent);

describe("a collapsed group in the track tree", () => {
  it("shows as one row with its count, and reads its threads a page at a time", async () => {
    const api = serveThreads();
    render(<Tree open={["algo-1", "algo-1/cpu", "algo-1/1"]} />);
    const row = screen.getByText("CPU threads").closest("li")!;
    expect(row.className).toContain("tl-row-aggregate");
    expect(within(row).getByText("620 threads")).toBeTruthy();
    expect(api.requests).toHaveLength(0);

    fireEvent.click(screen.getByRole("button", { name: "Expand CPU threads" }));
    await screen.findByText("500 of 620 shown");
    expect(threadRows()).toHaveLength(GROUP_PAGE);
    expect(threadRows()[0]).toBe("thread 1");
    expect(threadRows()[GROUP_PAGE - 1]).toBe("thread 500");

    fireEvent.click(screen.getByRole("button", { name: "Show more" }));
    await waitFor(() => expect(threadRows()).toHaveLength(THREADS));
    expect(screen.queryByRole("button", { name: "Show more" })).toBeNull();
    expect(new Set(threadRows()).size).toBe(THREADS);
    expect(threadRows()[THREADS - 1]).toBe("thread 620");
    const asked = api
      .sent("GET /api/jobs/7/timeline/tracks/children/")
      .map((r) => [
        r.url.searchParams.get("group"),
        r.url.searchParams.get("offset"),
        r.url.searchParams.get("limit"),
      ]);
    expect(asked).toEqual([
      [GROUP, "0", "500"],
      [GROUP, "500", "500"],
    ]);
  });

  it("reads the first page of a group a link opened", async () => {
    serveThreads();
    render(<Tree open={["algo-1", "algo-1/cpu", "algo-1/1", GROUP]} />);
    await screen.findByText("500 of 620 shown");
    expect(screen.getByRole("button", { name: "Collapse CPU threads" })).toBeTruthy();
  });
});
