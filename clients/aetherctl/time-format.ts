/**
 * Human-readable time spans for aetherctl: the AGE of a projection (now minus
 * its version, which is its export time) and timeouts. Pure, no I/O: the
 * current time is always passed in.
 */
import { parseVersion } from "../../services/common/projection-version.js";

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const YEAR = 365 * DAY;

/**
 * Formats a span in milliseconds the way `kubectl get` prints ages, with at
 * most two units and more precision for short spans: `45s`, `3m12s`, `42m`,
 * `3h5m`, `30h`, `3d4h`, `12d`, `3y45d`. A negative span (a version in the
 * future: clock skew between clusters) is formatted with a leading `-`.
 */
export function formatSpan(ms: number): string {
  if (ms < 0) return `-${formatSpan(-ms)}`;
  const s = Math.floor(ms / SECOND);
  if (ms < MINUTE) return `${s}s`;
  const m = Math.floor(ms / MINUTE);
  if (ms < 10 * MINUTE) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (ms < HOUR) return `${m}m`;
  const h = Math.floor(ms / HOUR);
  if (ms < 8 * HOUR) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (ms < 2 * DAY) return `${h}h`;
  const d = Math.floor(ms / DAY);
  if (ms < 8 * DAY) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (ms < 2 * YEAR) return `${d}d`;
  const y = Math.floor(ms / YEAR);
  const rest = Math.floor((ms - y * YEAR) / DAY);
  return rest === 0 ? `${y}y` : `${y}y${rest}d`;
}

/**
 * The age of a projection whose `version` is an RFC 3339 export time, at
 * `nowMs` (milliseconds since the epoch); `-` when the version is not a valid
 * timestamp (the import policy rejects such projections).
 */
export function formatAge(version: string, nowMs: number): string {
  const nanos = parseVersion(version);
  if (nanos === undefined) return "-";
  return formatSpan(nowMs - Number(nanos / 1_000_000n));
}

/**
 * Formats a duration in milliseconds as Go and Gateway API users write it:
 * `10s`, `2.5s`, `250ms`, `1m30s`, `0s` (0 means disabled for timeouts).
 */
export function formatMillis(ms: number): string {
  if (ms === 0) return "0s";
  if (ms < SECOND) return `${ms}ms`;
  const hours = Math.floor(ms / HOUR);
  const minutes = Math.floor((ms % HOUR) / MINUTE);
  const seconds = (ms % MINUTE) / SECOND;
  return [
    hours > 0 ? `${hours}h` : "",
    minutes > 0 ? `${minutes}m` : "",
    seconds > 0 ? `${Number(seconds.toFixed(3))}s` : "",
  ].join("");
}
