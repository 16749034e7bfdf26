/**
 * Aligned text tables for aetherctl's human-readable output: left-aligned
 * columns separated by two spaces, no trailing blanks, and a bold header only
 * when colour is on (a terminal). Pure, no I/O.
 */

/** The gap between two columns. */
const GAP = "  ";
const BOLD = "\u001b[1m";
const RESET = "\u001b[0m";

/** Options of {@link formatTable} and {@link createStreamTable}. */
export interface TableOptions {
  /** Whether to print the header in bold (only for a terminal); default false. */
  readonly color?: boolean;
  /** Text put before every line, for tables nested under a heading; default none. */
  readonly indent?: string;
}

/**
 * The display width of a cell: its length in code points, so that a name with
 * non-ASCII letters does not push the next column. Control characters and
 * line breaks are never in cells ({@link cleanCell} replaces them).
 */
export function displayWidth(text: string): number {
  return [...text].length;
}

/** Replaces line breaks and tabs in a cell with spaces, so that a row stays one line. */
export function cleanCell(text: string): string {
  return text.replace(/[\r\n\t]+/g, " ");
}

function padCell(text: string, width: number): string {
  return text + " ".repeat(Math.max(0, width - displayWidth(text)));
}

function joinRow(cells: readonly string[], widths: readonly number[]): string {
  const last = cells.length - 1;
  return cells
    .map((cell, index) => (index === last ? cell : padCell(cell, widths[index] ?? 0)))
    .join(GAP)
    .trimEnd();
}

function headerLine(header: readonly string[], widths: readonly number[], color: boolean): string {
  const line = joinRow(header, widths);
  return color ? `${BOLD}${line}${RESET}` : line;
}

/**
 * Formats a table: `header` then `rows`, every column as wide as its widest
 * cell. Rows shorter than the header are padded with empty cells. Returns the
 * lines joined with `\n`, with a final `\n`; an empty string when `header`
 * is empty.
 */
export function formatTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  options: TableOptions = {},
): string {
  if (header.length === 0) return "";
  const indent = options.indent ?? "";
  const cleaned = rows.map((row) => header.map((_, index) => cleanCell(row[index] ?? "")));
  // A loop, not Math.max(...cells): spreading a long column as arguments
  // overflows the call stack.
  const widths = header.map((title) => displayWidth(title));
  for (const row of cleaned) {
    row.forEach((cell, index) => {
      widths[index] = Math.max(widths[index] ?? 0, displayWidth(cell));
    });
  }
  const lines = [
    headerLine(header, widths, options.color ?? false),
    ...cleaned.map((row) => joinRow(row, widths)),
  ];
  return lines.map((line) => `${indent}${line}\n`).join("");
}

/** A table printed one row at a time, for streams whose rows are not known in advance. */
export interface StreamTable {
  /** The header line, with a final `\n`. */
  header(): string;
  /**
   * One row, with a final `\n`. Columns are at least as wide as the header,
   * the minimum widths given, and every earlier cell of the column, so rows
   * stay aligned as long as their cells fit.
   */
  row(cells: readonly string[]): string;
}

/**
 * Creates a {@link StreamTable} with `header` and per-column minimum widths
 * (`minWidths[i]`, default the header's width).
 */
export function createStreamTable(
  header: readonly string[],
  minWidths: readonly number[] = [],
  options: TableOptions = {},
): StreamTable {
  const indent = options.indent ?? "";
  const widths = header.map((title, index) => Math.max(displayWidth(title), minWidths[index] ?? 0));
  return {
    header: () => `${indent}${headerLine(header, widths, options.color ?? false)}\n`,
    row(cells) {
      const cleaned = header.map((_, index) => cleanCell(cells[index] ?? ""));
      cleaned.forEach((cell, index) => {
        widths[index] = Math.max(widths[index] ?? 0, displayWidth(cell));
      });
      return `${indent}${joinRow(cleaned, widths)}\n`;
    },
  };
}

/**
 * Formats `label: value` lines with the values aligned, for headers such as
 * the one of `aetherctl status`. Returns the lines with a final `\n`.
 */
export function formatFields(
  fields: readonly (readonly [string, string])[],
  options: TableOptions = {},
): string {
  const indent = options.indent ?? "";
  const width = fields.reduce((widest, [label]) => Math.max(widest, displayWidth(label) + 1), 0);
  return fields
    .map(([label, value]) =>
      `${indent}${padCell(`${label}:`, width)}  ${cleanCell(value)}`.trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join("");
}
