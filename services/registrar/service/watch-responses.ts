/**
 * The messages of a WatchConfig stream, from what the config cache reports:
 * first the subscription's initial sync (a SNAPSHOT per projection, or the
 * replayed changes as UPSERT and DELETE), then SYNCED (`resumed` when it was
 * a replay), then an UPSERT or DELETE per later change, and a KEEPALIVE
 * whenever the stream idles. A projection travels as the cache holds it: its
 * stored bytes on a binary stream (see `encoded-messages.ts`), decoded only
 * on a JSON one. Synchronous and free of I/O; the stream itself (waiting,
 * timers, backlog) is `watch-stream.ts`.
 */
import { create } from "@bufbuild/protobuf";
import {
  type WatchConfigResponse,
  WatchConfigResponseSchema,
  WatchEventType,
} from "../../../gen/aether/registry/v1/config_service_pb.js";
import {
  type CachedProjection,
  type CacheEvent,
  decodeCachedProjection,
  type InitialSync,
} from "../cache/config-cache.js";
import { withEncodedMessages } from "./encoded-messages.js";

/**
 * Returns a watch response carrying `entry` as its projection: its stored
 * bytes when the stream is binary, the decoded message otherwise.
 */
function withProjection(
  response: WatchConfigResponse,
  entry: CachedProjection | undefined,
  binary: boolean,
): WatchConfigResponse {
  if (entry === undefined) return response;
  if (!binary) {
    response.projection = decodeCachedProjection(entry);
    return response;
  }
  return withEncodedMessages(response, WatchConfigResponseSchema.field.projection, [entry.value]);
}

/**
 * The response for one change: UPSERT (carrying the projection) or DELETE,
 * with the change's service, origin and revision.
 */
export function eventResponse(event: CacheEvent, binary: boolean): WatchConfigResponse {
  const response = create(WatchConfigResponseSchema, {
    type: event.type === "upsert" ? WatchEventType.UPSERT : WatchEventType.DELETE,
    service: event.service,
    originCluster: event.origin,
    revision: BigInt(event.revision),
  });
  return withProjection(response, event.entry, binary);
}

/**
 * The responses a subscription starts with, in order: for a snapshot, a
 * SNAPSHOT per entry at the snapshot's revision; for a replay, the response
 * of each replayed change ({@link eventResponse}); then SYNCED at the
 * initial sync's revision, `resumed` for a replay and `storeUnavailable`
 * when the subscription was served the view kept through a store loss. Lazy: a projection is
 * decoded (on a JSON stream) only when its response is taken.
 */
export function* initialResponses(
  initial: InitialSync,
  binary: boolean,
  storeUnavailable = false,
): Generator<WatchConfigResponse, void, undefined> {
  if (initial.kind === "snapshot") {
    for (const entry of initial.entries) {
      const response = create(WatchConfigResponseSchema, {
        type: WatchEventType.SNAPSHOT,
        service: entry.service,
        originCluster: entry.origin,
        revision: BigInt(initial.revision),
      });
      yield withProjection(response, entry, binary);
    }
  } else {
    for (const event of initial.events) yield eventResponse(event, binary);
  }
  yield create(WatchConfigResponseSchema, {
    type: WatchEventType.SYNCED,
    revision: BigInt(initial.revision),
    resumed: initial.kind === "replay",
    storeUnavailable,
  });
}

/**
 * A KEEPALIVE response at `revision` (the revision the cache is at),
 * `storeUnavailable` while the cache serves the view it kept through a
 * store loss.
 */
export function keepaliveResponse(revision: number, storeUnavailable = false): WatchConfigResponse {
  return create(WatchConfigResponseSchema, {
    type: WatchEventType.KEEPALIVE,
    revision: BigInt(revision),
    storeUnavailable,
  });
}
