import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { type DataColumn, Table } from "./DataTable";

type Rank = { rank: number; node: string; step_ns: number; wait_ns: number | null };

const RANKS: Rank[] = [
  { rank: 0, node: "node-b", step_ns: 120, wait_ns: 5 },
  { rank: 1, node: "node-a", step_ns: 300, wait_ns: null },
  { rank: 2, node: "node-a", step_ns: 120, wait_ns: 40 },
];

const COLUMNS: DataColumn<Rank>[] = [
  { key: "rank", label: "Rank" },
  { key: "node", label: "Node" },
  { key: "step_ns", label: "Step", format: (ns) => `${ns} ns` },
  {
    key: "wait_share",
    label: "Wait share",
    value: (row) => (row.wait_ns === null ? null : row.wait_ns / row.step_ns),
    cell: (row) =>
      row.wait_ns === null ? <em>not derivable</em> : `${row.wait_ns} of ${row.step_ns}`,
  },
  {
    key: "link",
    label: "Details",
    unsortable: true,
    cell: (row) => <a href={`#r${row.rank}`}>Open</a>,
  },
];

function column(index: number): string[] {
  return within(screen.getByRole("table", { name: "Ranks" }))
    .getAllByRole("row")
    .slice(1)
    .map((row) => within(row).getAllByRole("cell")[index]!.textContent!);
}

describe("Table", () => {
  it("draws every row, its cells as the columns say, numbers right-aligned", () => {
    render(<Table label="Ranks" rows={RANKS} columns={COLUMNS} />);
    expect(column(0)).toEqual(["0", "1", "2"]);
    expect(column(2)).toEqual(["120 ns", "300 ns", "120 ns"]);
    expect(column(3)).toEqual(["5 of 120", "not derivable", "40 of 120"]);
    expect(screen.getAllByRole("link", { name: "Open" })[1]).toHaveAttribute("href", "#r1");
    expect(screen.getByRole("columnheader", { name: "Step" })).toHaveClass("num");
    expect(screen.getByRole("columnheader", { name: "Details" })).not.toHaveClass("sortable");
  });

  it("sorts by a column's value, not its text: ties keep the rows' order, missing values last", async () => {
    const user = userEvent.setup();
    render(
      <Table
        label="Ranks"
        rows={RANKS}
        columns={COLUMNS}
        defaultSort={{ key: "rank", desc: false }}
      />,
    );
    await user.click(screen.getByRole("button", { name: "Step" }));
    expect(column(0)).toEqual(["1", "0", "2"]);
    await user.click(screen.getByRole("button", { name: "Wait share" }));
    expect(column(0)).toEqual(["2", "0", "1"]);
    await user.click(screen.getByRole("button", { name: "Wait share" }));
    expect(column(0)).toEqual(["0", "2", "1"]);
    await user.click(screen.getByRole("button", { name: "Node" }));
    expect(screen.getByRole("columnheader", { name: "Node" })).toHaveAttribute(
      "aria-sort",
      "ascending",
    );
    expect(column(0)).toEqual(["1", "2", "0"]);
  });

  it("leaves a server-sorted table's order alone and asks for the clicked column", async () => {
    const user = userEvent.setup();
    const onSort = vi.fn();
    render(
      <Table
        label="Ranks"
        rows={RANKS}
        columns={COLUMNS}
        sort={{ key: "node", desc: true }}
        onSort={onSort}
      />,
    );
    expect(screen.getByRole("columnheader", { name: "Node" })).toHaveAttribute(
      "aria-sort",
      "descending",
    );
    expect(column(0)).toEqual(["0", "1", "2"]);
    await user.click(screen.getByRole("button", { name: "Step" }));
    expect(onSort).toHaveBeenCalledWith("step_ns");
    expect(column(0)).toEqual(["0", "1", "2"]);
  });

  it("has plain headers when unsorted, and rows that answer a click or Enter", async () => {
    const user = userEvent.setup();
    const onRowClick = vi.fn();
    render(
      <Table
        label="Ranks"
        rows={RANKS}
        columns={COLUMNS}
        unsorted
        onRowClick={onRowClick}
        isActive={(row) => row.rank === 2}
        rowAttributes={(row) => ({ "data-rank": String(row.rank) })}
      />,
    );
    expect(screen.queryByRole("button", { name: "Step" })).not.toBeInTheDocument();
    const rows = within(screen.getByRole("table", { name: "Ranks" })).getAllByRole("row");
    expect(rows[3]).toHaveAttribute("aria-selected", "true");
    expect(rows[1]).toHaveAttribute("data-rank", "0");
    await user.click(within(rows[2]!).getByText("300 ns"));
    rows[1]!.focus();
    await user.keyboard("{Enter}");
    expect(onRowClick.mock.calls.map(([row]) => (row as Rank).rank)).toEqual([1, 0]);
  });
});
