/**
 * The pure decisions of HTTP/2 session upkeep (`session-upkeep.ts` is the
 * shell): when to PING a session, when its peer has been silent too long,
 * and when a header block it started has taken too long to finish.
 *
 * A header block in progress is seen from outside nghttp2 as a stream the
 * session has begun processing (`session.state.lastProcStreamID`, which
 * nghttp2 advances when a request's HEADERS frame begins) that the server
 * has not been handed yet (the highest stream id of its `stream` events):
 * nghttp2 hands a stream over only once its header block is complete.
 * A stream nghttp2 refuses (beyond SETTINGS_MAX_CONCURRENT_STREAMS) does
 * not advance it. A request whose finished header block nghttp2 rejects as
 * malformed looks the same as an unfinished one, until a later stream is
 * handed over; such a session is also closed after the header timeout.
 */

/** What upkeep remembers about a session between ticks. */
export interface SessionClock {
  /** When the last PING was sent (or the session started, before the first). */
  readonly lastPingAt: number;
  /** When the PING now awaiting its answer was sent; undefined when none is. */
  readonly pingSentAt: number | undefined;
  /** The header block in progress, and since when it was seen; undefined when none is. */
  readonly headerBlock: { readonly streamId: number; readonly since: number } | undefined;
}

/** What upkeep reads from a live session at a tick. */
export interface SessionObservation {
  /** `session.state.lastProcStreamID`: the last stream whose header block began. */
  readonly lastProcStreamId: number;
  /** The highest stream id the server was handed (its header block complete). */
  readonly highestStreamId: number;
}

/** The limits session upkeep applies. */
export interface SessionUpkeepLimits {
  /** How long a started header block may take to finish. */
  readonly headerTimeoutMs: number;
  /** The interval between PINGs; 0: no PINGs. */
  readonly pingIntervalMs: number;
  /** How long a PING may stay unanswered. */
  readonly pingTimeoutMs: number;
}

/** What to do with a session at a tick. */
export type SessionAction =
  | { readonly type: "none" }
  | { readonly type: "ping" }
  | { readonly type: "destroy"; readonly reason: "header_timeout" | "ping_timeout" };

/** The clock of a session that starts at `now`. */
export function newSessionClock(now: number): SessionClock {
  return { lastPingAt: now, pingSentAt: undefined, headerBlock: undefined };
}

/**
 * The header block in progress after `observed` at `now`: none when every
 * begun stream was handed over; the same one (with its first sighting) when
 * the same stream is still unfinished; otherwise a new one seen now.
 */
export function observeHeaderBlock(
  previous: SessionClock["headerBlock"],
  observed: SessionObservation,
  now: number,
): SessionClock["headerBlock"] {
  if (observed.lastProcStreamId <= observed.highestStreamId) return undefined;
  if (previous?.streamId === observed.lastProcStreamId) return previous;
  return { streamId: observed.lastProcStreamId, since: now };
}

/**
 * Decides what to do with a session at `now`: destroy it when its header
 * block or its PING is overdue (the header block first), PING it when the
 * interval has passed and no PING is awaiting its answer, else nothing.
 */
export function decideSessionAction(
  clock: SessionClock,
  now: number,
  limits: SessionUpkeepLimits,
): SessionAction {
  if (clock.headerBlock !== undefined && now - clock.headerBlock.since >= limits.headerTimeoutMs) {
    return { type: "destroy", reason: "header_timeout" };
  }
  if (clock.pingSentAt !== undefined && now - clock.pingSentAt >= limits.pingTimeoutMs) {
    return { type: "destroy", reason: "ping_timeout" };
  }
  if (
    limits.pingIntervalMs > 0 &&
    clock.pingSentAt === undefined &&
    now - clock.lastPingAt >= limits.pingIntervalMs
  ) {
    return { type: "ping" };
  }
  return { type: "none" };
}

/** The shortest and longest interval between upkeep ticks, in milliseconds. */
const MIN_TICK_MS = 20;
const MAX_TICK_MS = 1_000;

/**
 * How often upkeep looks at every session: a quarter of the shortest limit
 * it enforces, between 20 ms and 1 s, so a deadline is enforced at most a
 * quarter late.
 */
export function upkeepTickMs(limits: SessionUpkeepLimits): number {
  const enforced = [limits.headerTimeoutMs, limits.pingTimeoutMs];
  if (limits.pingIntervalMs > 0) enforced.push(limits.pingIntervalMs);
  const shortest = Math.min(...enforced);
  return Math.min(MAX_TICK_MS, Math.max(MIN_TICK_MS, Math.floor(shortest / 4)));
}
