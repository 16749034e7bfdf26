/**
 * Log lines that cannot flood: a part that logs once per item (a source
 * problem, a rejected route, a store key that is not a projection key) logs
 * through a {@link RateLimitedLog}, which writes at most a few lines of each
 * kind per interval and counts the rest. When an interval in which lines
 * were held back ends, one summary line says how many (`N more … suppressed`),
 * so nothing is dropped silently. Twenty thousand junk keys cost a handful
 * of lines, not twenty thousand.
 */
import type { Logger } from "./logger.js";

/** The default of {@link RateLimitedLogOptions.intervalMs}: one minute. */
export const DEFAULT_LOG_INTERVAL_MS = 60_000;
/** The default of {@link RateLimitedLogOptions.perInterval}: five lines. */
export const DEFAULT_LINES_PER_INTERVAL = 5;

/** The levels a {@link RateLimitedLog} writes at. */
export type RateLimitedLevel = "debug" | "info" | "warn" | "error";

/** Options of {@link createRateLimitedLog}. */
export interface RateLimitedLogOptions {
  /** The length of a kind's interval, in milliseconds (default one minute). */
  readonly intervalMs?: number;
  /** How many lines of one kind are written per interval (default 5); the rest are counted. */
  readonly perInterval?: number;
}

/** See {@link createRateLimitedLog}. */
export interface RateLimitedLog {
  /**
   * Writes `message` with `fields` at `level`, unless `kind` already wrote
   * its lines for the current interval: then the line is only counted (and
   * reported in the interval's summary line). Returns whether it was written.
   * `kind` names a family of lines (a fixed string such as `source-problem`),
   * never an item: the limiter keeps state per kind.
   */
  log(level: RateLimitedLevel, kind: string, fields: object, message: string): boolean;
  /** {@link RateLimitedLog.log} at `warn` level. */
  warn(kind: string, fields: object, message: string): boolean;
  /** How many lines of `kind` were held back since the limiter was created. */
  suppressed(kind: string): number;
  /**
   * Writes the summary line of every kind that held lines back in its
   * current interval, and starts every kind afresh. Idempotent; the owner
   * calls it when it stops, so that a summary is not lost with the timer.
   */
  flush(): void;
}

/** What the limiter keeps about one kind of line. */
interface KindState {
  /** When the current interval of the kind began. */
  start: number;
  /** Lines written in it. */
  written: number;
  /** Lines held back in it. */
  held: number;
  /** The level of the last line held back (the summary's level). */
  level: RateLimitedLevel;
  /** Ends the interval and writes its summary; set while lines are held back. */
  timer: NodeJS.Timeout | undefined;
  /** Lines held back over the limiter's life. */
  total: number;
}

/**
 * Creates a rate-limited log over `logger`: per kind, the first
 * `perInterval` lines of an interval of `intervalMs` are written; later ones
 * are counted, and when the interval ends (a timer that does not keep the
 * process alive) a summary line at the same level says how many were held
 * back. The interval of a kind starts with its first line after the last
 * one ended.
 */
export function createRateLimitedLog(
  logger: Logger,
  options: RateLimitedLogOptions = {},
): RateLimitedLog {
  const intervalMs = options.intervalMs ?? DEFAULT_LOG_INTERVAL_MS;
  const perInterval = options.perInterval ?? DEFAULT_LINES_PER_INTERVAL;
  const kinds = new Map<string, KindState>();

  /** Writes the summary of `kind` (if it held lines back) and forgets its interval. */
  const endInterval = (kind: string, state: KindState) => {
    if (state.timer !== undefined) clearTimeout(state.timer);
    state.timer = undefined;
    if (state.held > 0) {
      logger[state.level](
        { kind, suppressed: state.held, intervalMs },
        `${state.held} more ${kind} log lines suppressed in ${Math.round(intervalMs / 1000)} s`,
      );
    }
    state.written = 0;
    state.held = 0;
    state.start = Number.NEGATIVE_INFINITY;
  };

  const log = (level: RateLimitedLevel, kind: string, fields: object, message: string) => {
    const now = Date.now();
    let state = kinds.get(kind);
    if (state === undefined) {
      state = { start: now, written: 0, held: 0, level, timer: undefined, total: 0 };
      kinds.set(kind, state);
    } else if (now - state.start >= intervalMs) {
      endInterval(kind, state);
      state.start = now;
    }
    if (state.written < perInterval) {
      state.written++;
      logger[level](fields, message);
      return true;
    }
    state.held++;
    state.total++;
    state.level = level;
    if (state.timer === undefined) {
      const owned = state;
      owned.timer = setTimeout(
        () => endInterval(kind, owned),
        Math.max(0, owned.start + intervalMs - now),
      );
      owned.timer.unref?.();
    }
    return false;
  };

  return {
    log,
    warn: (kind, fields, message) => log("warn", kind, fields, message),
    suppressed: (kind) => kinds.get(kind)?.total ?? 0,
    flush() {
      for (const [kind, state] of kinds) endInterval(kind, state);
    },
  };
}
