/**
 * The fleet grid's keyboard moves (a roving-tabindex grid, WAI-ARIA's grid
 * pattern): arrows move one cell, Home/End to the row's first/last cell,
 * Ctrl+Home/End to the grid's first/last cell, PageUp/PageDown ten rows.
 * Pure: a position and a key in, the next position (or none) out.
 */

/** A cell of the grid's body: row and column indexes. */
export interface GridPos {
  readonly row: number;
  readonly col: number;
}

/** How many rows a PageUp/PageDown moves. */
export const PAGE_ROWS = 10;

function clamp(n: number, max: number): number {
  return Math.max(0, Math.min(n, max));
}

/**
 * Where `key` (a KeyboardEvent's `key`) moves from `pos` in a grid of
 * `rows` x `cols`; undefined when the key is not a move (let the browser
 * have it) or the grid is empty. A move past an edge stays at the edge.
 */
export function moveInGrid(
  pos: GridPos,
  key: string,
  size: { rows: number; cols: number },
  ctrl = false,
): GridPos | undefined {
  if (size.rows <= 0 || size.cols <= 0) return undefined;
  const lastRow = size.rows - 1;
  const lastCol = size.cols - 1;
  const at = { row: clamp(pos.row, lastRow), col: clamp(pos.col, lastCol) };
  switch (key) {
    case "ArrowUp":
      return { ...at, row: clamp(at.row - 1, lastRow) };
    case "ArrowDown":
      return { ...at, row: clamp(at.row + 1, lastRow) };
    case "ArrowLeft":
      return { ...at, col: clamp(at.col - 1, lastCol) };
    case "ArrowRight":
      return { ...at, col: clamp(at.col + 1, lastCol) };
    case "Home":
      return ctrl ? { row: 0, col: 0 } : { ...at, col: 0 };
    case "End":
      return ctrl ? { row: lastRow, col: lastCol } : { ...at, col: lastCol };
    case "PageUp":
      return { ...at, row: clamp(at.row - PAGE_ROWS, lastRow) };
    case "PageDown":
      return { ...at, row: clamp(at.row + PAGE_ROWS, lastRow) };
    default:
      return undefined;
  }
}

/** `pos` kept inside a grid that changed size (rows came or went); {0,0} for an empty one. */
export function clampPos(pos: GridPos, size: { rows: number; cols: number }): GridPos {
  return { row: clamp(pos.row, size.rows - 1), col: clamp(pos.col, size.cols - 1) };
}
