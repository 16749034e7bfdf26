/**
 * The project's rule for long functions: none in services/ or clients/ is
 * longer than about 150 lines unless the comment above it says why (a line
 * with "Why it is long:"). Measured on the real syntax tree, so a function's
 * length is from its first line to its closing brace.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** "About 150 lines": a function this long or longer needs a reason. */
const LIMIT = 160;
const REASON = "Why it is long:";

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

/** The comments right above a node, or above the statement that declares it. */
function leadingComments(text: string, node: ts.Node): string {
  let holder: ts.Node = node;
  while (
    holder.parent !== undefined &&
    (ts.isVariableDeclaration(holder.parent) ||
      ts.isVariableDeclarationList(holder.parent) ||
      ts.isVariableStatement(holder.parent) ||
      ts.isPropertyAssignment(holder.parent) ||
      ts.isExportAssignment(holder.parent))
  ) {
    holder = holder.parent;
  }
  const ranges = ts.getLeadingCommentRanges(text, holder.getFullStart()) ?? [];
  return ranges.map((range) => text.slice(range.pos, range.end)).join("\n");
}

/** The functions of a file longer than {@link LIMIT} lines without a reason, as `file:line name (N lines)`. */
function unexplainedLongFunctions(file: string, text: string): string[] {
  const kind = file.endsWith(".tsx") ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines >= LIMIT && !leadingComments(text, node).includes(REASON)) {
        const named = node as ts.Node & { name?: ts.Node };
        const name = named.name?.getText(source) ?? "(anonymous)";
        found.push(`${file}:${first + 1} ${name} (${lines} lines)`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("function length", () => {
  it(`no function in services/ or clients/ reaches ${LIMIT} lines without saying why`, () => {
    const files = [...sourceFiles("services"), ...sourceFiles("clients")];
    expect(files.length).toBeGreaterThan(100);
    const long = files.flatMap((file) =>
      unexplainedLongFunctions(file, readFileSync(join(root, file), "utf8")),
    );
    expect(long).toEqual([]);
  });

  it("finds a long function and accepts one whose comment says why", () => {
    const body = Array.from({ length: LIMIT }, (_, i) => `  const x${i} = ${i};`).join("\n");
    const long = `export function big(): void {\n${body}\n}\n`;
    expect(unexplainedLongFunctions("a.ts", long)).toEqual([`a.ts:1 big (${LIMIT + 2} lines)`]);
    const arrow = `const big = () => {\n${body}\n};\n`;
    expect(unexplainedLongFunctions("b.ts", arrow)).toEqual([
      `b.ts:1 (anonymous) (${LIMIT + 2} lines)`,
    ]);
    const explained = `/**\n * Does it all.\n *\n * ${REASON} a table.\n */\n${long}`;
    expect(unexplainedLongFunctions("c.ts", explained)).toEqual([]);
    const short = "function small(): number {\n  return 1;\n}\n";
    expect(unexplainedLongFunctions("d.ts", short)).toEqual([]);
  });
});
