import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { type DataColumn, type DataRow, DataTable, type DataTableProps } from "./DataTable";

const COLUMNS: DataColumn[] = [
  { key: "name", label: "Operator", code: true },
  { key: "count", label: "Calls" },
  { key: "self_ns", label: "Self CPU", format: (ns) => `${ns / 1000} µs` },
  { key: "gbps", label: "Bandwidth", csv: "bandwidth_gbps" },
];
const ROWS: DataRow[] = [
  { name: "aten::mm", count: 3, self_ns: 9000, gbps: 1.5 },
  { name: "aten::add, inplace", count: 10, self_ns: 2000, gbps: null },
  { name: "aten::addmm", count: 1, self_ns: 12000, gbps: 0.25 },
  { name: "Optimizer.step", count: 5, self_ns: 4000, gbps: 3 },
];

function names(): string[] {
  const table = screen.getByRole("table", { name: "Operators" });
  return within(table)
    .getAllByRole("row")
    .slice(1)
    .map((row) => within(row).getAllByRole("cell")[0]!.textContent!);
}

/** The text of the CSV the Export button hands to the browser. */
async function exportedCsv(
  user: ReturnType<typeof userEvent.setup>,
): Promise<{ name: string; text: string }> {
  let blob: Blob | undefined;
  vi.stubGlobal(
    "URL",
    class extends URL {
      static createObjectURL(made: Blob) {
        blob = made;
        return "blob:csv";
      }
      static revokeObjectURL() {}
    },
  );
  const click = vi.spyOn(HTMLAnchorElement.prototype, "click").mockImplementation(() => {});
  await user.click(screen.getByRole("button", { name: "Export CSV" }));
  const link = click.mock.contexts[0] as HTMLAnchorElement;
  click.mockRestore();
  const text = await new Promise<string>((resolve) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result as string);
    reader.readAsText(blob!);
  });
  return { name: link.download, text };
}

function renderTable(props: Partial<DataTableProps<DataRow>> = {}) {
  return render(
    <DataTable
      title="Operators"
      rows={ROWS}
      columns={COLUMNS}
      filterKey="name"
      fileName="operators"
      defaultSort={{ key: "self_ns", desc: true }}
      {...props}
    />,
  );
}

describe("DataTable", () => {
  beforeEach(() => {
    // jsdom lays nothing out: a 15-row view over rows 30 px tall, as a browser would measure.
    vi.spyOn(HTMLElement.prototype, "clientHeight", "get").mockReturnValue(450);
    vi.spyOn(HTMLElement.prototype, "offsetHeight", "get").mockReturnValue(30);
    return () => vi.restoreAllMocks();
  });

  it("shows every row in the default order, formatted", () => {
    renderTable();
    expect(names()).toEqual(["aten::addmm", "aten::mm", "Optimizer.step", "aten::add, inplace"]);
    expect(screen.getByRole("columnheader", { name: "Self CPU" })).toHaveAttribute(
      "aria-sort",
      "descending",
    );
    expect(screen.getByText("12 µs")).toBeInTheDocument();
    expect(screen.getByText("4 rows")).toBeInTheDocument();
  });

  it("sorts by a clicked column, numbers largest first, then the other way", async () => {
    const user = userEvent.setup();
    renderTable();
    const calls = screen.getByRole("columnheader", { name: "Calls" });
    await user.click(within(calls).getByRole("button"));
    expect(calls).toHaveAttribute("aria-sort", "descending");
    expect(screen.getByRole("columnheader", { name: "Self CPU" })).not.toHaveAttribute("aria-sort");
    expect(names()).toEqual(["aten::add, inplace", "Optimizer.step", "aten::mm", "aten::addmm"]);
    await user.click(within(calls).getByRole("button"));
    expect(calls).toHaveAttribute("aria-sort", "ascending");
    expect(names()).toEqual(["aten::addmm", "aten::mm", "Optimizer.step", "aten::add, inplace"]);
  });

  it("sorts text A to Z first, ignoring case, and missing values last either way", async () => {
    const user = userEvent.setup();
    renderTable();
    await user.click(
      within(screen.getByRole("columnheader", { name: "Operator" })).getByRole("button"),
    );
    expect(names()).toEqual(["aten::add, inplace", "aten::addmm", "aten::mm", "Optimizer.step"]);
    const bandwidth = within(screen.getByRole("columnheader", { name: "Bandwidth" })).getByRole(
      "button",
    );
    await user.click(bandwidth);
    expect(names()).toEqual(["Optimizer.step", "aten::mm", "aten::addmm", "aten::add, inplace"]);
    await user.click(bandwidth);
    expect(names()).toEqual(["aten::addmm", "aten::mm", "Optimizer.step", "aten::add, inplace"]);
  });

  it("filters by name, ignoring case", async () => {
    const user = userEvent.setup();
    renderTable();
    await user.type(screen.getByLabelText("Filter Operators by name"), "ADD");
    expect(names()).toEqual(["aten::addmm", "aten::add, inplace"]);
    expect(screen.getByText("2 of 4 rows")).toBeInTheDocument();
  });

  it("exports the rows shown, filtered and sorted, with raw values under unit-named headers", async () => {
    const user = userEvent.setup();
    renderTable();
    await user.type(screen.getByLabelText("Filter Operators by name"), "aten");
    await user.click(
      within(screen.getByRole("columnheader", { name: "Calls" })).getByRole("button"),
    );
    const csv = await exportedCsv(user);
    expect(csv.name).toBe("operators.csv");
    expect(csv.text).toBe(
      "name,count,self_ns,bandwidth_gbps\r\n" +
        '"aten::add, inplace",10,2000,\r\n' +
        "aten::mm,3,9000,1.5\r\n" +
        "aten::addmm,1,12000,0.25\r\n",
    );
  });

  it("renders only the rows in view of thousands, and exports them all", async () => {
    const user = userEvent.setup();
    const many = Array.from({ length: 5000 }, (_, i) => ({
      name: `kernel_${i}`,
      count: i,
      self_ns: i * 10,
      gbps: 1,
    }));
    renderTable({ rows: many });
    expect(screen.getByText("5,000 rows")).toBeInTheDocument();
    const rendered = within(screen.getByRole("table", { name: "Operators" })).getAllByRole("row");
    expect(rendered.length).toBeLessThan(50);
    expect(names()[0]).toBe("kernel_4999");
    const lines = (await exportedCsv(user)).text.trimEnd().split("\r\n");
    expect(lines).toHaveLength(5001);
    expect(lines[1]).toBe("kernel_4999,4999,49990,1");
  });

  it("says when the server sent only the busiest rows", () => {
    renderTable({ total: 25_000 });
    expect(screen.getByText(/sent the 4 rows with the most time of 25,000/)).toBeInTheDocument();
  });

  it("has no filter box without a name column and draws nothing without rows", () => {
    const { container, rerender } = renderTable({ filterKey: undefined });
    expect(screen.queryByRole("searchbox")).not.toBeInTheDocument();
    rerender(<DataTable title="Operators" rows={[]} columns={COLUMNS} fileName="operators" />);
    expect(container).toBeEmptyDOMElement();
  });
});
