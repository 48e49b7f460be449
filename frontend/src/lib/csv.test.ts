import { describe, expect, it } from "vitest";
import { toCsv } from "./csv";

describe("toCsv", () => {
  it("writes a header line and one CRLF-ended line per row", () => {
    expect(
      toCsv(
        ["name", "self_ns"],
        [
          ["aten::mm", 1200],
          ["aten::add", 7],
        ],
      ),
    ).toBe("name,self_ns\r\naten::mm,1200\r\naten::add,7\r\n");
  });

  it("quotes fields with commas, quotes or line breaks", () => {
    const kernel = 'void gemm<float, 4>("x")';
    expect(toCsv(["name"], [[kernel], ["a\nb"]])).toBe(
      'name\r\n"void gemm<float, 4>(""x"")"\r\n"a\nb"\r\n',
    );
  });

  it("leaves missing values empty and keeps numbers' full precision", () => {
    expect(toCsv(["a", "b", "c"], [[null, undefined, 0.1 + 0.2]])).toBe(
      "a,b,c\r\n,,0.30000000000000004\r\n",
    );
  });
});
