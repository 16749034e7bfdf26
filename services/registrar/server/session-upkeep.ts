/**
 * Keeps every HTTP/2 session honest, on one timer for all of them (the
 * decisions are `session-upkeep-rules.ts`): it PINGs each session every
 * ping interval and destroys one whose peer leaves a PING unanswered for the
 * ping timeout (a frozen or vanished client: its streams end, and with them
 * their handlers and gauges), and it destroys a session that started a
 * header block and did not finish it within the header timeout.
 */
import type { Http2Session, ServerHttp2Stream } from "node:http2";
import type { Logger } from "../../runtime/logger.js";
import type { Refusals } from "./refusals.js";
import {
  decideSessionAction,
  newSessionClock,
  observeHeaderBlock,
  type SessionClock,
  type SessionUpkeepLimits,
  upkeepTickMs,
} from "./session-upkeep-rules.js";

/** Options of {@link createSessionUpkeep}. */
export interface SessionUpkeepOptions {
  /** The limits enforced. */
  readonly limits: SessionUpkeepLimits;
  /** Where destroyed sessions are counted and logged. */
  readonly refusals: Refusals;
  /** Where PING failures are logged (debug). */
  readonly logger: Logger;
  /** The clock, in milliseconds; default `performance.now`. */
  readonly now?: () => number;
}

/** See {@link createSessionUpkeep}. */
export interface SessionUpkeep {
  /** Starts looking after a new session, until it closes. */
  track(session: Http2Session): void;
  /** How many sessions are looked after. */
  readonly size: number;
  /** Stops the timer; sessions are no longer PINGed or timed out. */
  stop(): void;
}

/** What upkeep keeps per session. */
interface Tracked {
  clock: SessionClock;
  highestStreamId: number;
}

/** Creates the upkeep; its timer runs while it tracks at least one session. */
export function createSessionUpkeep(options: SessionUpkeepOptions): SessionUpkeep {
  const { limits, refusals, logger } = options;
  const now = options.now ?? (() => performance.now());
  const sessions = new Map<Http2Session, Tracked>();
  const tickMs = upkeepTickMs(limits);
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

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
    for (const [session, tracked] of sessions) {
      if (session.destroyed) continue;
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
      if (action.type === "ping") ping(session, tracked, at);
      else if (action.type === "destroy") {
        refusals.refuse(action.reason, { remoteAddress: session.socket?.remoteAddress });
        sessions.delete(session);
        session.destroy();
      }
    }
  }

  return {
    track(session) {
      if (stopped) return;
      const tracked: Tracked = { clock: newSessionClock(now()), highestStreamId: 0 };
      sessions.set(session, tracked);
      session.on("stream", (stream: ServerHttp2Stream) => {
        tracked.highestStreamId = Math.max(tracked.highestStreamId, stream.id ?? 0);
      });
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
    stop() {
      stopped = true;
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      sessions.clear();
    },
  };
}
