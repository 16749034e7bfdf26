/**
 * The Fleet grid's row order while the page is open: the first answer for a
 * set of filters sorts the rows (worst first, as the registrar sends them);
 * later answers keep that order, so a refresh moves no row under the
 * operator's eyes or cursor. A service seen for the first time goes last;
 * one that is gone leaves its place. Pure.
 */

/** Something with a service name: a row of the grid. */
export interface Named {
  readonly service: string;
}

/**
 * `rows` in the order of `previous` (the services of the last rows shown),
 * those not in it after them in their own order. Returns `rows` itself when
 * there is no previous order.
 */
export function keepRowOrder<T extends Named>(
  previous: readonly string[] | undefined,
  rows: readonly T[],
): readonly T[] {
  if (previous === undefined) return rows;
  const place = new Map(previous.map((service, index) => [service, index]));
  const known: T[] = [];
  const added: T[] = [];
  for (const row of rows) (place.has(row.service) ? known : added).push(row);
  known.sort((a, b) => (place.get(a.service) ?? 0) - (place.get(b.service) ?? 0));
  return [...known, ...added];
}
