import { describe, expect, it } from "vitest";
import {
  bandwidthLines,
  kernelNameColumn,
  queueLines,
  relativeToFirstPoint,
  temporalSlices,
  withRank,
} from "./analysesView";

describe("analyses view", () => {
  it("splits a rank's span into idle, compute and non-compute", () => {
    const slices = temporalSlices({
      rank: 0,
      span_ns: 200,
      idle_ns: 50,
      compute_ns: 100,
      non_compute_ns: 50,
    });
    expect(slices.map((s) => [s.name, s.value, s.shareText])).toEqual([
      ["Idle", 50, "25.0%"],
      ["Compute", 100, "50.0%"],
      ["Non-compute", 50, "25.0%"],
    ]);
  });

  it("names queue-length lines by rank and stream", () => {
    const [line] = queueLines([{ rank: 1, stream: 7, points: [[10, 2]] }]);
    expect(line!.name).toBe("rank 1 stream 7");
    expect(line!.points).toEqual([[10, 2]]);
  });

  it("names bandwidth lines by rank and copy kind", () => {
    const [line] = bandwidthLines([{ rank: 0, kind: "Memcpy HtoD", points: [[5, 12.5]] }]);
    expect(line!.name).toBe("rank 0 Memcpy HtoD");
  });

  it("puts every line on seconds since the earliest point", () => {
    const lines = relativeToFirstPoint([
      {
        name: "a",
        color: "#000",
        points: [
          [2e9, 1],
          [3e9, 2],
        ],
      },
      { name: "b", color: "#111", points: [[1.5e9, 4]] },
    ]);
    expect(lines.map((l) => l.points)).toEqual([
      [
        [0.5, 1],
        [1.5, 2],
      ],
      [[0, 4]],
    ]);
  });

  it("adds a rank column only to tables of several ranks", () => {
    const name = [{ key: "name", label: "Kernel" }];
    expect(withRank([{ rank: 0 }, { rank: 0 }], name).map((c) => c.key)).toEqual(["name"]);
    expect(withRank([{ rank: 0 }, { rank: 1 }], name).map((c) => c.key)).toEqual(["rank", "name"]);
  });
});

describe("kernel names in the analyses tables", () => {
  it("shortens a C++ kernel name to fit and keeps the full name for the tooltip", () => {
    const full =
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, " +
      "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)";
    const column = kernelNameColumn("Kernel");
    const row = { name: full };
    expect(column.cell!(row)).toBe(
      "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, Array<char*, 3> >",
    );
    expect(column.cellTitle!(row)).toBe(full);
  });

  it("keeps a copy's name whole: its parentheses say what kind of copy it is", () => {
    const column = kernelNameColumn("Kernel");
    expect(column.cell!({ name: "Memcpy HtoD (Pageable -> Device)" })).toBe(
      "Memcpy HtoD (Pageable -> Device)",
    );
  });
});
