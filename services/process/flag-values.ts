/**
 * Parsers of the flag values several programs share (`--listen`, durations,
 * byte sizes, counts, `--log-level`). Each throws a {@link UsageError} that names the flag.
 */
import { parseByteSize } from "../common/byte-size.js";
import { parseDuration } from "../common/duration.js";
import { UsageError } from "./usage-error.js";

const LISTEN = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]*):(\d{1,5})$/;

/**
 * Parses `--listen HOST:PORT` (an IPv6 host in brackets; an empty host means
 * every address, `0.0.0.0`). `example` is shown in the error message.
 */
export function parseListenFlag(
  value: string,
  example = "127.0.0.1:8080",
): { host: string; port: number } {
  const match = LISTEN.exec(value);
  const port = match === null ? Number.NaN : Number(match[2]);
  if (match === null || port > 65535) {
    throw new UsageError(
      `--listen ${JSON.stringify(value)} is not HOST:PORT (for example ${example})`,
    );
  }
  const host = (match[1] as string).replace(/^\[|\]$/g, "");
  return { host: host === "" ? "0.0.0.0" : host, port };
}

/** Parses a duration flag in milliseconds, at least `minMs` (default 0). */
export function parseDurationFlag(flag: string, text: string, minMs = 0): number {
  let ms: number;
  try {
    ms = parseDuration(text);
  } catch (error) {
    throw new UsageError(`--${flag}: ${(error as Error).message}`);
  }
  if (ms < minMs) throw new UsageError(`--${flag} must be at least ${minMs}ms`);
  return ms;
}

/** The pino levels `--log-level` accepts. */
export const LOG_LEVELS: readonly string[] = [
  "trace",
  "debug",
  "info",
  "warn",
  "error",
  "fatal",
  "silent",
];

/** Checks `--log-level` and returns it. */
export function parseLogLevelFlag(value: string): string {
  if (!LOG_LEVELS.includes(value)) {
    throw new UsageError(
      `--log-level ${JSON.stringify(value)} must be trace, debug, info, warn or error`,
    );
  }
  return value;
}

/** Parses a byte-size flag (`16KiB`, `4MiB`, `65536`) in bytes, at least `minBytes` (default 1). */
export function parseByteSizeFlag(flag: string, text: string, minBytes = 1): number {
  let bytes: number;
  try {
    bytes = parseByteSize(text);
  } catch (error) {
    throw new UsageError(`--${flag}: ${(error as Error).message}`);
  }
  if (bytes < minBytes) throw new UsageError(`--${flag} must be at least ${minBytes} bytes`);
  return bytes;
}

/** Parses a flag that counts something: a whole number from `min` (default 1) up. */
export function parseCountFlag(flag: string, text: string, min = 1): number {
  const count = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(count)) {
    throw new UsageError(`--${flag}: ${JSON.stringify(text)} is not a whole number`);
  }
  if (count < min) throw new UsageError(`--${flag} must be at least ${min}`);
  return count;
}
