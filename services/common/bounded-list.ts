/**
 * Lists that cannot grow without bound: problems, rejections and conflicts
 * are kept (and served, and logged) as their first entries plus a count of
 * the rest, never in full. Where a list travels in a message whose shape
 * cannot change (GetConfigStatus), the count rides in one final synthetic
 * entry whose `reason` is {@link TRUNCATED_REASON} (or whose `where` is
 * {@link TRUNCATED_WHERE}, for source problems) and whose message is a
 * {@link truncationNote}; readers find the count again with
 * {@link omittedCount}. Pure.
 */

/** How many entries a bounded list keeps by default (status lists, source problems). */
export const DEFAULT_LIST_LIMIT = 100;

/** The longest text (a message, a name) kept in one entry of a bounded list, in characters. */
export const MAX_ENTRY_TEXT = 1_024;

/** The `reason` of the synthetic final entry of a truncated list of rejections. */
export const TRUNCATED_REASON = "truncated";

/** The `where` of the synthetic final entry of a truncated list of source problems. */
export const TRUNCATED_WHERE = "(truncated)";

/** The first entries of a list, and how many were left out. */
export interface BoundedList<T> {
  /** The first `limit` entries, in order. */
  readonly items: T[];
  /** How many entries followed them and were left out. */
  readonly omitted: number;
}

/** Keeps the first `limit` (a non-negative integer) of `items`; see {@link BoundedList}. */
export function boundList<T>(items: readonly T[], limit: number): BoundedList<T> {
  if (items.length <= limit) return { items: [...items], omitted: 0 };
  return { items: items.slice(0, limit), omitted: items.length - limit };
}

/**
 * Returns `items` without repeats: the first item of each `key`, in order.
 * Never builds an argument list from the items, so any length is fine.
 */
export function dedupeBy<T>(items: Iterable<T>, key: (item: T) => string): T[] {
  const seen = new Set<string>();
  const kept: T[] = [];
  for (const item of items) {
    const id = key(item);
    if (seen.has(id)) continue;
    seen.add(id);
    kept.push(item);
  }
  return kept;
}

/** `n` with its digits grouped by commas, `384,853` (the same in every locale). */
export function groupDigits(n: number): string {
  return String(Math.trunc(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/**
 * The message of a synthetic final entry: `384,853 more problems not shown
 * (384,953 in all)`. `noun` is plural (`problems`, `rejections`).
 */
export function truncationNote(omitted: number, total: number, noun: string): string {
  return `${groupDigits(omitted)} more ${noun} not shown (${groupDigits(total)} in all)`;
}

/**
 * The count a {@link truncationNote} carries, or undefined when `message`
 * is not one.
 */
export function omittedCount(message: string): number | undefined {
  const match = /^(\d{1,3}(?:,\d{3})*) more \S.* not shown \(/.exec(message);
  if (match === null) return undefined;
  return Number((match[1] as string).replaceAll(",", ""));
}

/**
 * `text` cut to at most `max` characters (default {@link MAX_ENTRY_TEXT}):
 * longer text keeps its start and ends in `… (N more characters)`.
 */
export function capText(text: string, max: number = MAX_ENTRY_TEXT): string {
  if (text.length <= max) return text;
  const suffixOf = (kept: number) => `… (${groupDigits(text.length - kept)} more characters)`;
  // The suffix's length depends on the count it names; a longer guess settles it.
  const kept = Math.max(0, max - suffixOf(0).length);
  return `${text.slice(0, kept)}${suffixOf(kept)}`;
}
