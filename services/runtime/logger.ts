/**
 * Structured logging for every process here: pino, one JSON object per line
 * on standard error, and a silent logger that libraries default to.
 */
import { destination, type Logger as PinoLogger, pino, stdTimeFunctions } from "pino";

/**
 * The structured logger every registrar and agent part takes: a pino logger
 * writing one JSON object per line. Parts accept it as an option and default
 * to {@link createSilentLogger} so libraries never log unless asked to.
 */
export type Logger = PinoLogger;

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** The minimum level; default `info` (or `$LOG_LEVEL`). */
  readonly level?: string;
  /** Fields added to every line, for example `{ component: "registrar" }`. */
  readonly base?: Record<string, unknown>;
}

/** Creates a JSON logger on standard error. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? process.env.LOG_LEVEL ?? "info",
      base: options.base ?? {},
      timestamp: stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination({ fd: 2, sync: true }),
  );
}

/** Creates a logger that discards everything (the default for libraries and tests). */
export function createSilentLogger(): Logger {
  return pino({ level: "silent" });
}
