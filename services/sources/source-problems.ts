/**
 * The bound on a source's problem list: however broken the input (four
 * duplicated 15 MB manifests once made 384,953 problems), a source holds,
 * serves and logs at most {@link MAX_SOURCE_PROBLEMS} of them plus one entry
 * counting the rest.
 */
import {
  boundList,
  capText,
  DEFAULT_LIST_LIMIT,
  dedupeBy,
  TRUNCATED_WHERE,
  truncationNote,
} from "../common/bounded-list.js";
import type { SourceProblem } from "./object-source.js";

export { TRUNCATED_WHERE } from "../common/bounded-list.js";

/** How many problems a source lists; the rest are counted in a final entry. */
export const MAX_SOURCE_PROBLEMS = DEFAULT_LIST_LIMIT;

/**
 * Bounds a problem list: repeats (the same `where` and `message`) are
 * dropped, the first `limit` (default {@link MAX_SOURCE_PROBLEMS}) distinct
 * problems are kept, in order, with their text capped (see `capText`), and
 * when more remain a final entry `{ where: TRUNCATED_WHERE, message: "N more
 * problems not shown (M in all)" }` counts them. The result is a new array;
 * it is empty only when `problems` is.
 */
export function boundProblems(
  problems: readonly SourceProblem[],
  limit: number = MAX_SOURCE_PROBLEMS,
): SourceProblem[] {
  const distinct = dedupeBy(problems, (p) => `${p.where}\n${p.message}`);
  const { items, omitted } = boundList(distinct, limit);
  const kept = items.map((p) => ({ where: capText(p.where), message: capText(p.message) }));
  if (omitted > 0) {
    kept.push({
      where: TRUNCATED_WHERE,
      message: truncationNote(omitted, distinct.length, "problems"),
    });
  }
  return kept;
}
