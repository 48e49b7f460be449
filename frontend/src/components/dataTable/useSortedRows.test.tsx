import { act, renderHook } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { DataColumn, TableProps } from "./columns";
import { useSortedRows } from "./useSortedRows";

type Op = { name: string; calls: number | null; kind?: string };

const OPS: Op[] = [
  { name: "aten::mm", calls: 3, kind: "cpu_op" },
  { name: "Optimizer.step", calls: null },
  { name: "aten::addmm", calls: 12, kind: "CPU_op" },
  { name: "aten::add", calls: 12, kind: "kernel" },
];
const COLUMNS: DataColumn<Op>[] = [
  { key: "name", label: "Name" },
  { key: "calls", label: "Calls" },
  { key: "kind", label: "Kind" },
  { key: "per_call", label: "Share", value: (op) => (op.calls === null ? null : op.calls / 30) },
];

function shown(props: Partial<TableProps<Op>> = {}, filter: [string, string] | null = null) {
  const hook = renderHook(
    (p: Partial<TableProps<Op>>) =>
      useSortedRows({ label: "Ops", rows: OPS, columns: COLUMNS, ...p }, filter),
    { initialProps: props },
  );
  const names = () =>
    hook.result.current.table.getRowModel().rows.map((row) => row.original.name as string);
  const click = (key: string) =>
    act(() => hook.result.current.table.getColumn(key)!.toggleSorting());
  return { hook, names, click };
}

describe("useSortedRows", () => {
  it("keeps the rows' own order until a column is picked", () => {
    expect(shown().names()).toEqual(OPS.map((op) => op.name));
  });

  it("sorts numbers (and values computed from them) largest first, missing ones last", () => {
    const { hook, names, click } = shown({ defaultSort: { key: "calls", desc: true } });
    // Ties keep the rows' order.
    expect(names()).toEqual(["aten::addmm", "aten::add", "aten::mm", "Optimizer.step"]);
    expect([...hook.result.current.numeric].sort()).toEqual(["calls", "per_call"]);
    click("calls");
    expect(names()).toEqual(["aten::mm", "aten::addmm", "aten::add", "Optimizer.step"]);
    click("per_call");
    expect(names()).toEqual(["aten::addmm", "aten::add", "aten::mm", "Optimizer.step"]);
  });

  it("sorts text A to Z first ignoring case, missing text last", () => {
    const { names, click } = shown();
    click("kind");
    expect(names()).toEqual(["aten::mm", "aten::addmm", "aten::add", "Optimizer.step"]);
    click("name");
    expect(names()).toEqual(["aten::add", "aten::addmm", "aten::mm", "Optimizer.step"]);
  });

  it("shows the server's order as it came when the server sorts", () => {
    const { hook, names, click } = shown({ sort: { key: "calls", desc: false } });
    expect(names()).toEqual(OPS.map((op) => op.name));
    expect(hook.result.current.table.getColumn("calls")!.getIsSorted()).toBe("asc");
    click("name");
    expect(names()).toEqual(OPS.map((op) => op.name));
  });

  it("filters one column by text, ignoring case", () => {
    expect(shown({}, ["name", "ADD"]).names()).toEqual(["aten::addmm", "aten::add"]);
  });
});
