import { describe, expect, it } from "vitest";
import {
  cleanCell,
  createStreamTable,
  displayWidth,
  formatFields,
  formatTable,
} from "../../clients/aetherctl/table-format.js";

describe("formatTable", () => {
  const cases: {
    name: string;
    header: string[];
    rows: string[][];
    options?: Parameters<typeof formatTable>[2];
    want: string;
  }[] = [
    {
      name: "aligns every column to its widest cell and leaves no trailing blanks",
      header: ["SERVICE", "ORIGIN", "AGE"],
      rows: [
        ["shop/checkout", "hub", "5m"],
        ["a/b", "west-cluster", ""],
      ],
      want: [
        "SERVICE        ORIGIN        AGE",
        "shop/checkout  hub           5m",
        "a/b            west-cluster",
        "",
      ].join("\n"),
    },
    {
      name: "a header wider than every cell sets the width",
      header: ["PROJECTIONS", "X"],
      rows: [["2", "y"]],
      want: "PROJECTIONS  X\n2            y\n",
    },
    {
      name: "pads short rows with empty cells and drops extra cells",
      header: ["A", "B", "C"],
      rows: [["1"], ["1", "2", "3", "4"]],
      want: "A  B  C\n1\n1  2  3\n",
    },
    {
      name: "no rows prints the header only",
      header: ["A", "B"],
      rows: [],
      want: "A  B\n",
    },
    {
      name: "an empty header prints nothing",
      header: [],
      rows: [["x"]],
      want: "",
    },
    {
      name: "indents every line",
      header: ["A", "B"],
      rows: [["1", "2"]],
      options: { indent: "  " },
      want: "  A  B\n  1  2\n",
    },
    {
      name: "bolds the header only when colour is on",
      header: ["A", "B"],
      rows: [["1", "2"]],
      options: { color: true },
      want: "\u001b[1mA  B\u001b[0m\n1  2\n",
    },
    {
      name: "keeps a row on one line when a cell has line breaks",
      header: ["WHERE", "MESSAGE"],
      rows: [["f.yaml:3", "bad\nindent\there"]],
      want: "WHERE     MESSAGE\nf.yaml:3  bad indent here\n",
    },
    {
      name: "measures non-ASCII cells by code point",
      header: ["N", "X"],
      rows: [
        ["ü", "1"],
        ["ab", "2"],
      ],
      want: "N   X\nü   1\nab  2\n",
    },
  ];
  it.each(cases)("$name", ({ header, rows, options, want }) => {
    expect(formatTable(header, rows, options)).toBe(want);
  });
});

describe("createStreamTable", () => {
  it("starts at the minimum widths and widens a column when a longer cell arrives", () => {
    const table = createStreamTable(["TYPE", "REV", "SERVICE"], [6, 3]);
    expect(table.header()).toBe("TYPE    REV  SERVICE\n");
    expect(table.row(["UPSERT", "7", "a/b"])).toBe("UPSERT  7    a/b\n");
    expect(table.row(["SNAPSHOTS", "12345", "c/d"])).toBe("SNAPSHOTS  12345  c/d\n");
    expect(table.row(["DELETE", "8", "e/f"])).toBe("DELETE     8      e/f\n");
  });

  it("bolds the header when colour is on and indents rows", () => {
    const table = createStreamTable(["A"], [], { color: true, indent: "> " });
    expect(table.header()).toBe("> \u001b[1mA\u001b[0m\n");
    expect(table.row(["x", "ignored"])).toBe("> x\n");
  });
});

describe("formatFields", () => {
  it.each([
    {
      name: "aligns the values after the longest label",
      fields: [
        ["cluster", "hub"],
        ["control cluster", ""],
      ] as [string, string][],
      indent: undefined,
      want: "cluster:          hub\ncontrol cluster:\n",
    },
    {
      name: "indents",
      fields: [["a", "1"]] as [string, string][],
      indent: "  ",
      want: "  a:  1\n",
    },
    { name: "no fields", fields: [] as [string, string][], indent: undefined, want: "" },
  ])("$name", ({ fields, indent, want }) => {
    expect(formatFields(fields, indent === undefined ? {} : { indent })).toBe(want);
  });
});

describe("cells", () => {
  it.each([
    ["plain", "plain", 5],
    ["a\r\nb", "a b", 3],
    ["tab\there", "tab here", 8],
    ["ünï", "ünï", 3],
  ])("cleanCell(%j) is %j of width %d", (input, cleaned, width) => {
    expect(cleanCell(input)).toBe(cleaned);
    expect(displayWidth(cleaned)).toBe(width);
  });
});
