/**
 * Keeps every HTTP/2 session honest, on one timer for all of them (the
 * decisions are `session-upkeep-rules.ts`): it PINGs each session every
 * ping interval and destroys one whose peer leaves a PING unanswered for the
 * ping timeout (a frozen or vanished client: its streams end, and with them
 * their handlers and gauges), and it destroys a session that started a
 * header block and did not finish it within the header timeout. It also
 * counts the streams open over all sessions and, while more than
 * `--max-open-streams` are, ends the sessions that held the most over the
 * last ticks (`stream-shedding.ts`).
 */
import type { Http2Session, ServerHttp2Stream } from "node:http2";
import type { Logger } from "../../runtime/logger.js";
import type { RefusalReason, Refusals } from "./refusals.js";
import {
  decideSessionAction,
  newSessionClock,
  observeHeaderBlock,
  type SessionClock,
  type SessionUpkeepLimits,
  upkeepTickMs,
} from "./session-upkeep-rules.js";
import { type SessionStreams, sessionsToShed } from "./stream-shedding.js";

/** Options of {@link createSessionUpkeep}. */
export interface SessionUpkeepOptions {
  /** The limits enforced. */
  readonly limits: SessionUpkeepLimits & {
    /** The most streams open at once over all sessions (`--max-open-streams`). */
    readonly maxOpenStreams: number;
  };
  /** Where destroyed sessions are counted and logged. */
  readonly refusals: Refusals;
  /** Where PING failures are logged (debug). */
  readonly logger: Logger;
  /**
   * Ends a session at once, its connection included; default
   * `session.destroy()`. Node's own destroy waits until what the session
   * still has to write has been written, which a peer that reads nothing
   * never lets happen: its session and streams stayed.
   */
  readonly end?: (session: Http2Session) => void;
  /** The clock, in milliseconds; default `performance.now`. */
  readonly now?: () => number;
}

/** See {@link createSessionUpkeep}. */
export interface SessionUpkeep {
  /** Starts looking after a new session, until it closes. */
  track(session: Http2Session): void;
  /** How many sessions are looked after. */
  readonly size: number;
  /** How many streams are open over all of them. */
  readonly openStreams: number;
  /** Stops the timer; sessions are no longer PINGed or timed out. */
  stop(): void;
}

/** What upkeep keeps per session. */
interface Tracked {
  clock: SessionClock;
  highestStreamId: number;
  /** Its streams open now. */
  open: number;
  /** Its open streams at the last two ticks, the latest first. */
  before: [number, number];
}

/** Creates the upkeep; its timer runs while it tracks at least one session. */
export function createSessionUpkeep(options: SessionUpkeepOptions): SessionUpkeep {
  const { limits, refusals, logger } = options;
  const now = options.now ?? (() => performance.now());
  const end = options.end ?? ((session: Http2Session) => session.destroy());
  const sessions = new Map<Http2Session, Tracked>();
  const tickMs = upkeepTickMs(limits);
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let openStreams = 0;

  /** Counts a new stream of a session until it closes. */
  function opened(tracked: Tracked, stream: ServerHttp2Stream): void {
    tracked.highestStreamId = Math.max(tracked.highestStreamId, stream.id ?? 0);
    tracked.open++;
    openStreams++;
    stream.once("close", () => {
      tracked.open--;
      openStreams--;
    });
  }

  /** Counts and logs why, forgets the session and ends it with its connection. */
  function endSession(
    session: Http2Session,
    reason: RefusalReason,
    details: Record<string, unknown> = {},
  ): void {
    refusals.refuse(reason, { remoteAddress: session.socket?.remoteAddress, ...details });
    sessions.delete(session);
    end(session);
  }

  /** Samples a session's open streams at this tick; returns what it held over the last three. */
  function sampleHeld(tracked: Tracked): number {
    const [last, earlier] = tracked.before;
    tracked.before = [tracked.open, last];
    return Math.min(tracked.open, last, earlier);
  }

  function ping(session: Http2Session, tracked: Tracked, at: number): void {
    tracked.clock = { ...tracked.clock, lastPingAt: at, pingSentAt: at };
    try {
      session.ping((error) => {
        if (error !== null) {
          logger.debug({ err: error }, "http2 ping failed");
          return;
        }
        tracked.clock = { ...tracked.clock, pingSentAt: undefined };
      });
    } catch (error) {
      // Too many PINGs outstanding, or the session is going away.
      logger.debug({ err: error }, "http2 ping not sent");
    }
  }

  function tick(): void {
    const at = now();
    // The loads are gathered only while over the bound; every session is sampled at every tick.
    const over = openStreams > limits.maxOpenStreams;
    const loads: SessionStreams<Http2Session>[] = [];
    for (const [session, tracked] of sessions) {
      if (session.destroyed) continue;
      const held = sampleHeld(tracked);
      const headerBlock = observeHeaderBlock(
        tracked.clock.headerBlock,
        {
          lastProcStreamId: session.state.lastProcStreamID ?? 0,
          highestStreamId: tracked.highestStreamId,
        },
        at,
      );
      tracked.clock = { ...tracked.clock, headerBlock };
      const action = decideSessionAction(tracked.clock, at, limits);
      if (action.type === "destroy") endSession(session, action.reason);
      else {
        if (action.type === "ping") ping(session, tracked, at);
        if (over) loads.push({ session, open: tracked.open, held });
      }
    }
    if (!over) return;
    // Streams of sessions ended before are still counted until they close: not theirs to shed.
    const total = loads.reduce((sum, load) => sum + load.open, 0);
    for (const session of sessionsToShed(total, limits.maxOpenStreams, loads)) {
      const streams = sessions.get(session)?.open;
      endSession(session, "max_open_streams", { streams, maxOpenStreams: limits.maxOpenStreams });
    }
  }

  return {
    track(session) {
      if (stopped) return;
      const tracked: Tracked = {
        clock: newSessionClock(now()),
        highestStreamId: 0,
        open: 0,
        before: [0, 0],
      };
      sessions.set(session, tracked);
      session.on("stream", (stream: ServerHttp2Stream) => opened(tracked, stream));
      session.once("close", () => {
        sessions.delete(session);
        if (sessions.size === 0 && timer !== undefined) {
          clearInterval(timer);
          timer = undefined;
        }
      });
      if (timer === undefined) {
        timer = setInterval(tick, tickMs);
        timer.unref();
      }
    },
    get size() {
      return sessions.size;
    },
    get openStreams() {
      return openStreams;
    },
    stop() {
      stopped = true;
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      sessions.clear();
    },
  };
}
