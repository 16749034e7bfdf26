/**
 * The live feed's decisions, pure: how a batch of WatchConfig events, the
 * stream opening again, or its failure changes the console's state
 * (`live-feed.ts`). No timers and no I/O: `follow-watch.ts` feeds it.
 *
 * - A snapshot is collected apart and replaces the projections only when its
 *   SYNCED arrives (a snapshot cut short leaves the last complete state); a
 *   SYNCED with `resumed` keeps the state (the replay brought the changes).
 * - After the first snapshot, each upsert and delete is a change (newest
 *   first, at most {@link MAX_CHANGES}); a later full snapshot (the stream came
 *   back and could not resume) is diffed against what the console had, so
 *   only real changes are listed.
 * - Each service's history keeps the versions seen, oldest first, at most
 *   {@link MAX_HISTORY}; a version seen again (same version and origin) is not
 *   added twice in a row.
 */
import {
  type WatchConfigResponse,
  WatchEventType,
} from "../../../../gen/aether/registry/v1/config_service_pb.js";
import type { ServiceConfigProjection } from "../../../../gen/aether/registry/v1/projection_pb.js";
import type { LiveChange, LiveState, VersionSeen } from "./live-feed.js";

/** The most changes kept. */
export const MAX_CHANGES = 200;
/** The most versions kept per service. */
export const MAX_HISTORY = 50;

/** The reducer's state: the public state and the snapshot being collected. */
export interface LiveReducerState {
  readonly live: LiveState;
  /** The projections of a snapshot still arriving; undefined when none is. */
  readonly snapshot: Map<string, ServiceConfigProjection> | undefined;
  /** Whether the stream has been down since the last SYNCED. */
  readonly wasDown: boolean;
}

/** The stream is opening (again). */
export function opening(state: LiveReducerState, at: number): LiveReducerState {
  if (state.live.connection === "connecting") return state;
  return {
    ...state,
    snapshot: undefined,
    live: { ...state.live, connection: "connecting", since: at },
  };
}

/** The stream failed or ended (`error` says why); a snapshot cut short is dropped. */
export function failed(state: LiveReducerState, error: string, at: number): LiveReducerState {
  const since = state.live.connection === "down" ? state.live.since : at;
  return {
    live: { ...state.live, connection: "down", error, since },
    snapshot: undefined,
    wasDown: true,
  };
}

/** The state after a batch of events received at `at` (one new state per batch). */
export function applyEvents(
  state: LiveReducerState,
  events: readonly WatchConfigResponse[],
  at: number,
): LiveReducerState {
  let { live, snapshot, wasDown } = state;
  let projections: Map<string, ServiceConfigProjection> | undefined;
  let history: Map<string, readonly VersionSeen[]> | undefined;
  const changes: LiveChange[] = [];
  const ownProjections = () => {
    projections ??= new Map(live.projections);
    return projections;
  };
  const ownHistory = () => {
    history ??= new Map(live.history);
    return history;
  };
  const current = () => projections ?? live.projections;
  const remember = (service: string, projection: ServiceConfigProjection, revision: bigint) => {
    const seen = ownHistory();
    const list = seen.get(service) ?? [];
    const last = list[list.length - 1];
    if (last?.version === projection.version && last.origin === projection.originCluster) return;
    const entry = {
      version: projection.version,
      origin: projection.originCluster,
      receivedAt: at,
      revision,
    };
    seen.set(service, [...list, entry].slice(-MAX_HISTORY));
  };
  for (const event of events) {
    switch (event.type) {
      case WatchEventType.SNAPSHOT: {
        snapshot ??= new Map();
        if (event.projection !== undefined) snapshot.set(event.service, event.projection);
        break;
      }
      case WatchEventType.SYNCED: {
        if (!event.resumed) {
          const next = snapshot ?? new Map();
          if (live.synced) changes.push(...diff(current(), next, at));
          for (const [service, projection] of next) remember(service, projection, event.revision);
          projections = next;
        }
        snapshot = undefined;
        const came = wasDown && live.synced;
        live = {
          ...live,
          connection: "live",
          error: "",
          since: live.connection === "live" ? live.since : at,
          synced: true,
          revision: event.revision,
          ...(came ? { resumedAt: at, resumed: event.resumed } : {}),
        };
        wasDown = false;
        break;
      }
      case WatchEventType.UPSERT: {
        if (event.projection === undefined) break;
        ownProjections().set(event.service, event.projection);
        remember(event.service, event.projection, event.revision);
        if (live.synced) changes.push(change("upsert", event.service, event.projection, at));
        live = { ...live, revision: event.revision };
        break;
      }
      case WatchEventType.DELETE: {
        const had = current().get(event.service);
        ownProjections().delete(event.service);
        if (live.synced && had !== undefined) {
          changes.push({
            type: "delete",
            service: event.service,
            origin: event.originCluster || had.originCluster,
            version: "",
            receivedAt: at,
          });
        }
        live = { ...live, revision: event.revision };
        break;
      }
      case WatchEventType.KEEPALIVE: {
        if (event.revision > live.revision && snapshot === undefined) {
          live = { ...live, revision: event.revision };
        }
        break;
      }
      default:
        break;
    }
  }
  if (projections !== undefined) live = { ...live, projections };
  if (history !== undefined) live = { ...live, history };
  if (changes.length > 0) {
    live = { ...live, changes: [...changes.reverse(), ...live.changes].slice(0, MAX_CHANGES) };
  }
  return { live, snapshot, wasDown };
}

/** The change an upsert of `projection` is. */
function change(
  type: "upsert",
  service: string,
  projection: ServiceConfigProjection,
  at: number,
): LiveChange {
  return {
    type,
    service,
    origin: projection.originCluster,
    version: projection.version,
    receivedAt: at,
  };
}

/** The changes from `before` to `after` (a full snapshot replacing the state), in service order. */
function diff(
  before: ReadonlyMap<string, ServiceConfigProjection>,
  after: ReadonlyMap<string, ServiceConfigProjection>,
  at: number,
): LiveChange[] {
  const changes: LiveChange[] = [];
  const services = [...new Set([...before.keys(), ...after.keys()])].sort();
  for (const service of services) {
    const old = before.get(service);
    const now = after.get(service);
    if (now === undefined && old !== undefined) {
      changes.push({
        type: "delete",
        service,
        origin: old.originCluster,
        version: "",
        receivedAt: at,
      });
    } else if (
      now !== undefined &&
      (old === undefined || old.version !== now.version || old.originCluster !== now.originCluster)
    ) {
      changes.push(change("upsert", service, now, at));
    }
  }
  return changes;
}
