/**
 * The seam between the live stream and the views: what the console knows
 * from following `WatchConfig` (EFFECTIVE view, every service and mesh
 * record), as one immutable state object replaced on every change. The
 * implementation (`follow-watch.ts`) owns the stream, its resume and its
 * timers; the views only read `current()` and re-render on `subscribe`.
 */
import type { ServiceConfigProjection } from "../../../../gen/aether/registry/v1/projection_pb.js";

/** Where the stream is: opening (first time or again), up, or down (retrying). */
export type LiveConnection = "connecting" | "live" | "down";

/** One version of a service seen on the stream while the page is open. */
export interface VersionSeen {
  /** The projection's version. */
  readonly version: string;
  /** Its origin cluster. */
  readonly origin: string;
  /** When the console received it (ms since the epoch). */
  readonly receivedAt: number;
  /** The store revision of the event. */
  readonly revision: bigint;
}

/** One change the stream brought (after the first snapshot). */
export interface LiveChange {
  /** `upsert` (created or changed) or `delete`. */
  readonly type: "upsert" | "delete";
  /** The service (`namespace/name`, or `@mesh`). */
  readonly service: string;
  /** The origin of the projection the event is about. */
  readonly origin: string;
  /** The new version (empty for a delete). */
  readonly version: string;
  /** When the console received it (ms since the epoch). */
  readonly receivedAt: number;
}

/** What the console knows from the stream; replaced (never mutated) on each change. */
export interface LiveState {
  /** The stream's state. */
  readonly connection: LiveConnection;
  /** Why the stream is down (the last error's message); empty otherwise. */
  readonly error: string;
  /** When `connection` last changed (ms since the epoch). */
  readonly since: number;
  /** Whether a first snapshot completed (the projections are complete). */
  readonly synced: boolean;
  /** When the stream last came back after being down (ms); 0 when it never went down. */
  readonly resumedAt: number;
  /** Whether that came back by resuming (true) or with a full snapshot (false). */
  readonly resumed: boolean;
  /** The revision of the last event applied (0 before the first). */
  readonly revision: bigint;
  /** The effective projection of each service (and `@mesh`), by service. */
  readonly projections: ReadonlyMap<string, ServiceConfigProjection>;
  /** The versions of each service seen while the page is open, oldest first (bounded). */
  readonly history: ReadonlyMap<string, readonly VersionSeen[]>;
  /** The latest changes, newest first (bounded). */
  readonly changes: readonly LiveChange[];
}

/** The live stream as the views see it. */
export interface LiveFeed {
  /** The state now. */
  current(): LiveState;
  /** Calls `listener` after each change of the state; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void;
  /**
   * Opens the stream if it is not open yet (idempotent). The shell opens it
   * once the first view has its data, or at once for views that read it.
   */
  start(): void;
}

/** The state before the stream opened. */
export function initialLiveState(now: number): LiveState {
  return {
    connection: "connecting",
    error: "",
    since: now,
    synced: false,
    resumedAt: 0,
    resumed: false,
    revision: 0n,
    projections: new Map(),
    history: new Map(),
    changes: [],
  };
}
