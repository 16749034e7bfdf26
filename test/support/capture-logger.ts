/** A logger for tests that keeps every JSON line it writes. */
import { Writable } from "node:stream";
import { pino } from "pino";
import type { Logger } from "../../services/runtime/logger.js";

/** A logger and the lines it wrote, parsed. */
export interface CapturedLogger {
  /** The logger (level `debug`). */
  readonly logger: Logger;
  /** Every line written so far, parsed, with pino's numeric `level`. */
  readonly lines: Record<string, unknown>[];
  /** The lines whose `msg` is `msg`. */
  withMessage(msg: string): Record<string, unknown>[];
}

/** Creates a logger that records its lines in memory instead of writing them. */
export function captureLogger(): CapturedLogger {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const text of chunk.toString("utf8").split("\n")) {
        if (text.trim() !== "") lines.push(JSON.parse(text) as Record<string, unknown>);
      }
      callback();
    },
  });
  return {
    logger: pino({ level: "debug" }, sink),
    lines,
    withMessage: (msg) => lines.filter((line) => line.msg === msg),
  };
}
