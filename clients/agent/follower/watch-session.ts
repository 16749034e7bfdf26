/**
 * One WatchConfig stream as the agent follows it, as a pure reducer:
 * {@link step} takes the session and one received event and returns the
 * next session and what to do (the effects). No timers, no I/O.
 *
 * - **Buffering** (before SYNCED): SNAPSHOT, UPSERT and DELETE are buffered,
 *   so a partial snapshot is never applied; more than
 *   {@link MAX_BUFFERED_EVENTS} of them is a protocol error. SYNCED ends the
 *   phase: with `resumed = false` the buffered changes replace the state,
 *   with `resumed = true` they are applied to it (a protocol error when the
 *   agent asked for a snapshot, or when SYNCED's revision is before the
 *   resume point). KEEPALIVE changes nothing.
 * - **Live** (after SYNCED): every UPSERT and DELETE is applied as it comes
 *   (a revision going backwards is a protocol error); KEEPALIVE advances the
 *   resume point; a second SYNCED, or a SNAPSHOT, is a protocol error.
 * - Event types this agent does not know are ignored in both phases: newer
 *   registrars may send them.
 *
 * After a `protocol-error` effect the stream is to be abandoned; the session
 * returned with it is the one given.
 */
import {
  type WatchConfigResponse,
  WatchEventType,
} from "../../../gen/aether/registry/v1/config_service_pb.js";
import type { ReceivedChange } from "./candidate-set.js";

/** The longest snapshot (events before SYNCED) a session buffers. */
export const MAX_BUFFERED_EVENTS = 200_000;

/**
 * The changes buffered before SYNCED, newest first (a persistent list, so a
 * step never copies nor changes the buffer it was given).
 */
export interface BufferedChanges {
  /** The newest buffered change. */
  readonly change: ReceivedChange;
  /** The changes buffered before it. */
  readonly before: BufferedChanges | undefined;
  /** How many changes this list holds. */
  readonly count: number;
}

/** A stream before SYNCED: what it asked for, and what it received so far. */
export interface BufferingSession {
  /** The phase tag. */
  readonly phase: "buffering";
  /** The revision the stream asked to resume from; 0 asked for a snapshot. */
  readonly resume: bigint;
  /** The changes received before SYNCED; undefined when none. */
  readonly buffered: BufferedChanges | undefined;
}

/** A stream after SYNCED. */
export interface LiveSession {
  /** The phase tag. */
  readonly phase: "live";
  /**
   * The resume point: the revision of the last change applied, advanced by
   * keep-alives. While a stream is live nothing else moves the follower's
   * resume point, so this is it.
   */
  readonly appliedRevision: bigint;
}

/** The state of one WatchConfig stream. */
export type WatchSession = BufferingSession | LiveSession;

/** What a step asks its owner to do, in order. */
export type SessionEffect =
  /**
   * Commit a complete state at `revision` via `synced`: `changes` replace
   * the held candidates (`resumed` false) or are applied to them (`resumed`
   * true). The stream is now synced.
   */
  | {
      readonly type: "synced";
      readonly resumed: boolean;
      readonly revision: bigint;
      readonly changes: readonly ReceivedChange[];
    }
  /**
   * Apply `change` to the held candidates: commit the result at `revision`
   * via `change` when it differs, otherwise only advance the resume point to
   * `revision`.
   */
  | { readonly type: "change"; readonly revision: bigint; readonly change: ReceivedChange }
  /** Advance the resume point to `revision` (the state is unchanged). */
  | { readonly type: "advance"; readonly revision: bigint }
  /** The registrar broke the protocol: abandon the stream (a ProtocolError with `message`). */
  | { readonly type: "protocol-error"; readonly message: string };

/** The outcome of {@link step}. */
export interface SessionStep {
  /** The next session. */
  readonly session: WatchSession;
  /** What to do, in order; often none. */
  readonly effects: readonly SessionEffect[];
}

const NO_EFFECTS: readonly SessionEffect[] = [];

/**
 * The revision a new stream resumes from: the resume point when a state is
 * held for exactly the services to watch (a changed dependency set needs a
 * fresh snapshot), else 0 (a snapshot).
 */
export function resumeRevision(
  held: { readonly services: readonly string[] } | undefined,
  services: readonly string[],
  resumePoint: bigint,
): bigint {
  const same =
    held !== undefined &&
    held.services.length === services.length &&
    held.services.every((service, index) => service === services[index]);
  return same ? resumePoint : 0n;
}

/** The session of a stream just opened with `resume` as its resume revision. */
export function openSession(resume: bigint): BufferingSession {
  return { phase: "buffering", resume, buffered: undefined };
}

/** The buffered changes, oldest first. */
export function bufferedChanges(session: BufferingSession): ReceivedChange[] {
  const list = session.buffered;
  const changes = new Array<ReceivedChange>(list?.count ?? 0);
  for (let node = list; node !== undefined; node = node.before) {
    changes[node.count - 1] = node.change;
  }
  return changes;
}

/** The change a SNAPSHOT, UPSERT or DELETE event carries. */
export function changeOf(event: WatchConfigResponse): ReceivedChange {
  return {
    kind: event.type === WatchEventType.DELETE ? "delete" : "put",
    origin: event.originCluster,
    service: event.service,
    projection: event.projection,
  };
}

const fail = (session: WatchSession, message: string): SessionStep => ({
  session,
  effects: [{ type: "protocol-error", message }],
});

/**
 * Steps a session with one received event (see the module comment).
 * `resumePoint` is the revision the follower's state holds now; only a
 * SYNCED with `resumed` reads it, as a poll may have moved it while the
 * stream was buffering. Pure: neither argument is changed.
 */
export function step(
  session: WatchSession,
  event: WatchConfigResponse,
  resumePoint: bigint,
): SessionStep {
  switch (event.type) {
    case WatchEventType.SNAPSHOT:
    case WatchEventType.UPSERT:
    case WatchEventType.DELETE:
      return session.phase === "live" ? stepLiveChange(session, event) : buffer(session, event);
    case WatchEventType.SYNCED:
      return session.phase === "live"
        ? fail(session, "a second SYNCED event")
        : sync(session, event, resumePoint);
    case WatchEventType.KEEPALIVE:
      if (session.phase === "live" && event.revision > session.appliedRevision) {
        return {
          session: { phase: "live", appliedRevision: event.revision },
          effects: [{ type: "advance", revision: event.revision }],
        };
      }
      return { session, effects: NO_EFFECTS };
    default:
      return { session, effects: NO_EFFECTS };
  }
}

function buffer(session: BufferingSession, event: WatchConfigResponse): SessionStep {
  const count = session.buffered?.count ?? 0;
  if (count >= MAX_BUFFERED_EVENTS) {
    return fail(session, `more than ${MAX_BUFFERED_EVENTS} events before SYNCED`);
  }
  const buffered = { change: changeOf(event), before: session.buffered, count: count + 1 };
  return { session: { phase: "buffering", resume: session.resume, buffered }, effects: NO_EFFECTS };
}

function sync(
  session: BufferingSession,
  event: WatchConfigResponse,
  resumePoint: bigint,
): SessionStep {
  if (event.resumed) {
    if (session.resume === 0n) {
      return fail(session, "SYNCED says the stream resumed, but the agent asked for a snapshot");
    }
    if (event.revision < resumePoint) {
      return fail(
        session,
        `SYNCED resumed at revision ${event.revision}, before the resume point ${resumePoint}`,
      );
    }
  }
  return {
    session: { phase: "live", appliedRevision: event.revision },
    effects: [
      {
        type: "synced",
        resumed: event.resumed,
        revision: event.revision,
        changes: bufferedChanges(session),
      },
    ],
  };
}

function stepLiveChange(session: LiveSession, event: WatchConfigResponse): SessionStep {
  if (event.type === WatchEventType.SNAPSHOT) return fail(session, "SNAPSHOT event after SYNCED");
  if (event.revision < session.appliedRevision) {
    return fail(
      session,
      `${WatchEventType[event.type]} at revision ${event.revision} after revision ${session.appliedRevision}`,
    );
  }
  return {
    session: { phase: "live", appliedRevision: event.revision },
    effects: [{ type: "change", revision: event.revision, change: changeOf(event) }],
  };
}
