import { describe, expect, it } from "vitest";
import type { AnyColumn } from "./columns";
import { tableCsv } from "./exportCsv";

const COLUMNS: AnyColumn[] = [
  { key: "name", label: "Kernel", code: true },
  { key: "mean", label: "Bandwidth", csv: "mean_gbps", format: (v) => `${v.toFixed(1)} GB/s` },
  { key: "shapes", label: "Input shapes", value: (row) => row.inputs },
  { key: "link", label: "Open", unsortable: true, cell: () => "Open", value: () => null },
];

describe("tableCsv", () => {
  it("writes raw values under each column's CSV header, not the cells' text", () => {
    expect(
      tableCsv(COLUMNS, [{ name: "gemm", mean: 1 / 3, inputs: [[2, 3]] }, { name: "copy" }]),
    ).toBe('name,mean_gbps,shapes,link\r\ngemm,0.3333333333333333,"[[2,3]]",\r\ncopy,,,\r\n');
  });

  it("quotes names with commas, quotes and line breaks, doubling the quotes", () => {
    const rows = [
      { name: 'void gemm<float, 4>("x")', mean: 2 },
      { name: "two\r\nlines", mean: 3 },
      { name: "plain", mean: 4, inputs: ["a,b"] },
    ];
    expect(tableCsv(COLUMNS, rows)).toBe(
      "name,mean_gbps,shapes,link\r\n" +
        '"void gemm<float, 4>(""x"")",2,,\r\n' +
        '"two\r\nlines",3,,\r\n' +
        'plain,4,"[""a,b""]",\r\n',
    );
  });
});
