/**
 * Regular expressions as the contract means them: RE2 syntax and semantics,
 * matched in time linear in the input, whatever the pattern. A route's regex
 * comes from another cluster's author; a backtracking engine would let one
 * pattern such as `/(a+)+$` stall every evaluator that meets a long path.
 *
 * The engine is re2js, a pure-JavaScript port of RE2 (through RE2/J): the
 * same syntax as the data plane's RE2, the same automata-based matching, no
 * native code, so it runs unchanged in the registrar, the agent, aetherctl
 * and a browser. Pure, no I/O.
 */
import { RE2JS } from "re2js";

/** A compiled full-match pattern: `test` is true when the whole value matches. */
export interface FullMatcher {
  /** Reports whether all of `value` matches the pattern (linear in `value`'s length). */
  test(value: string): boolean;
}

/** How many compiled patterns are kept (a route table holds few distinct ones). */
const CACHE_LIMIT = 1024;
const cache = new Map<string, FullMatcher | string>();

/**
 * Compiles `pattern` (RE2 syntax) for full-match use, or returns why RE2
 * refuses it (a short phrase such as `invalid repeat count: {1001}`).
 * Results are cached.
 */
export function compileRe2(pattern: string): FullMatcher | string {
  const cached = cache.get(pattern);
  if (cached !== undefined) return cached;
  let result: FullMatcher | string;
  try {
    const compiled = RE2JS.compile(pattern);
    result = { test: (value: string) => compiled.matches(value) };
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    result = text.replace(/^error parsing regexp: /, "");
  }
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(pattern, result);
  return result;
}

/** Returns why RE2 refuses `pattern`, or undefined when it is valid RE2. */
export function re2Problem(pattern: string): string | undefined {
  const compiled = compileRe2(pattern);
  return typeof compiled === "string" ? compiled : undefined;
}

/** Reports whether all of `value` matches `pattern`; a pattern RE2 refuses matches nothing. */
export function re2FullMatch(pattern: string, value: string): boolean {
  const compiled = compileRe2(pattern);
  return typeof compiled !== "string" && compiled.test(value);
}
