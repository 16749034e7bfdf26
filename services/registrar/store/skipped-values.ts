/**
 * How a store's decoder reports what it skips or repairs (a key that is not
 * a projection key, a value that does not decode, a value re-stamped from
 * its key): each distinct offending value (a key at a revision) is counted
 * once, and logged through a rate-limited log, so that twenty thousand junk
 * keys cost a few log lines a minute and a count, not twenty thousand lines.
 */
import type { Logger } from "../../runtime/logger.js";
import { createRateLimitedLog } from "../../runtime/rate-limited-log.js";
import type { StoreCounters } from "./config-store.js";

/** What is reported: an invalid key, an undecodable value, or a re-stamped value. */
export type SkipKind = "key" | "value" | "stamp";

/** The counter of each kind. */
const COUNTER: Record<SkipKind, keyof StoreCounters> = {
  key: "invalidKeys",
  value: "decodeErrors",
  stamp: "restamped",
};

/** The rate-limited log kind of each kind. */
const LOG_KIND: Record<SkipKind, string> = {
  key: "invalid-store-key",
  value: "undecodable-store-value",
  stamp: "restamped-store-value",
};

/** See {@link createSkipReports}. */
export interface SkipReports {
  /** The live counters, one per kind. */
  readonly counters: StoreCounters;
  /**
   * Reports an offending value of `kind`, `key` at `revision`: the first
   * report of it is counted and logged (rate-limited, at warn level, with
   * `fields` and `message`); a repeat does nothing.
   */
  report(kind: SkipKind, key: string, revision: number, fields: object, message: string): void;
}

/**
 * Creates the reports of one decoder. `memory` distinct offending values are
 * remembered for de-duplication before the memory is cleared (and they may
 * be counted again).
 */
export function createSkipReports(logger: Logger, memory: number): SkipReports {
  const counters = { decodeErrors: 0, invalidKeys: 0, restamped: 0 };
  const seen = new Set<string>();
  const log = createRateLimitedLog(logger);
  return {
    counters,
    report(kind, key, revision, fields, message) {
      const id = `${kind} ${revision} ${key}`;
      if (seen.has(id)) return;
      if (seen.size >= memory) seen.clear();
      seen.add(id);
      counters[COUNTER[kind]]++;
      log.warn(LOG_KIND[kind], fields, message);
    },
  };
}
