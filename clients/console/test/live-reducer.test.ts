/**
 * The live feed's pure decisions (`live-reducer.ts`): snapshots replace the
 * projections only once complete, a resumed SYNCED keeps them, changes are
 * listed only after the first snapshot (a later full snapshot is diffed),
 * history grows by version, failures and re-openings move the connection.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  type WatchConfigResponse,
  WatchConfigResponseSchema,
  WatchEventType,
} from "../../../gen/aether/registry/v1/config_service_pb.js";
import { ServiceConfigProjectionSchema } from "../../../gen/aether/registry/v1/projection_pb.js";
import { initialLiveState } from "../src/live/live-feed.js";
import {
  applyEvents,
  failed,
  type LiveReducerState,
  MAX_CHANGES,
  opening,
} from "../src/live/live-reducer.js";

const start: LiveReducerState = { live: initialLiveState(0), snapshot: undefined, wasDown: false };

/** An event of `type` about `service` at `version` (origin hub) and `revision`. */
function event(
  type: WatchEventType,
  service = "",
  version = "",
  revision = 0n,
  resumed = false,
): WatchConfigResponse {
  const projection =
    type === WatchEventType.SNAPSHOT || type === WatchEventType.UPSERT
      ? create(ServiceConfigProjectionSchema, { service, version, originCluster: "hub" })
      : undefined;
  return create(WatchConfigResponseSchema, {
    type,
    service,
    originCluster: service === "" ? "" : "hub",
    revision,
    resumed,
    ...(projection === undefined ? {} : { projection }),
  });
}
const snap = (service: string, version: string) =>
  event(WatchEventType.SNAPSHOT, service, version, 5n);
const synced = (revision: bigint, resumed = false) =>
  event(WatchEventType.SYNCED, "", "", revision, resumed);
const upsert = (service: string, version: string, revision: bigint) =>
  event(WatchEventType.UPSERT, service, version, revision);
const remove = (service: string, revision: bigint) =>
  event(WatchEventType.DELETE, service, "", revision);

/** The projections' versions by service. */
const versions = (state: LiveReducerState) =>
  Object.fromEntries([...state.live.projections].map(([s, p]) => [s, p.version]));
/** The changes as `type service version`. */
const changes = (state: LiveReducerState) =>
  state.live.changes.map((c) => `${c.type} ${c.service} ${c.version}`.trim());

describe("the live feed's reducer", () => {
  it("publishes a snapshot only once its SYNCED arrives", () => {
    const half = applyEvents(start, [snap("shop/a", "v1")], 1);
    expect(half.live.projections.size).toBe(0);
    expect(half.live.synced).toBe(false);
    const whole = applyEvents(half, [snap("shop/b", "v1"), synced(5n)], 2);
    expect(versions(whole)).toEqual({ "shop/a": "v1", "shop/b": "v1" });
    expect(whole.live).toMatchObject({
      synced: true,
      connection: "live",
      revision: 5n,
      resumedAt: 0,
    });
    expect(changes(whole)).toEqual([]);
    expect(whole.live.history.get("shop/a")?.map((h) => h.version)).toEqual(["v1"]);
  });

  it("lists upserts and deletes after the snapshot, newest first, with history", () => {
    const ready = applyEvents(start, [snap("shop/a", "v1"), synced(5n)], 1);
    const next = applyEvents(
      ready,
      [
        upsert("shop/a", "v2", 6n),
        upsert("shop/c", "v1", 7n),
        remove("shop/a", 8n),
        remove("shop/x", 9n),
      ],
      2,
    );
    expect(versions(next)).toEqual({ "shop/c": "v1" });
    // The delete of a service the console never had is no change.
    expect(changes(next)).toEqual(["delete shop/a", "upsert shop/c v1", "upsert shop/a v2"]);
    expect(next.live.revision).toBe(9n);
    expect(next.live.history.get("shop/a")?.map((h) => h.version)).toEqual(["v1", "v2"]);
    // The state object is replaced, never mutated.
    expect(ready.live.projections.get("shop/a")?.version).toBe("v1");
  });

  it.each([
    {
      name: "a resumed SYNCED keeps the state and records the resume",
      events: [synced(9n, true)],
      want: { "shop/a": "v1", "shop/b": "v1" },
      listed: [],
      resumed: true,
    },
    {
      name: "a full snapshot after the outage is diffed: only real changes are listed",
      events: [snap("shop/a", "v1"), snap("shop/c", "v1"), synced(9n)],
      want: { "shop/a": "v1", "shop/c": "v1" },
      listed: ["upsert shop/c v1", "delete shop/b"],
      resumed: false,
    },
  ])("after the stream was down, $name", ({ events, want, listed, resumed }) => {
    const ready = applyEvents(start, [snap("shop/a", "v1"), snap("shop/b", "v1"), synced(5n)], 1);
    const down = failed(opening(failed(ready, "refused", 2), 3), "refused again", 4);
    expect(down.live).toMatchObject({ connection: "down", error: "refused again", since: 4 });
    const back = applyEvents(opening(down, 5), events, 6);
    expect(versions(back)).toEqual(want);
    expect(changes(back)).toEqual(listed);
    expect(back.live).toMatchObject({
      connection: "live",
      error: "",
      resumedAt: 6,
      resumed,
      since: 6,
    });
  });

  it("drops a snapshot cut short by a failure and keeps the last complete state", () => {
    const ready = applyEvents(start, [snap("shop/a", "v1"), synced(5n)], 1);
    const cut = failed(
      applyEvents(opening(failed(ready, "x", 2), 3), [snap("shop/z", "v9")], 4),
      "y",
      5,
    );
    expect(cut.snapshot).toBeUndefined();
    expect(versions(cut)).toEqual({ "shop/a": "v1" });
    const again = applyEvents(opening(cut, 6), [snap("shop/a", "v1"), synced(7n)], 7);
    expect(versions(again)).toEqual({ "shop/a": "v1" });
    expect(changes(again)).toEqual([]);
  });

  it("bounds the changes, and keeps the state object for a keep-alive that brings nothing", () => {
    let state = applyEvents(start, [synced(1n)], 1);
    const many = Array.from({ length: MAX_CHANGES + 20 }, (_, i) =>
      upsert(`shop/s${i}`, "v1", BigInt(i + 2)),
    );
    state = applyEvents(state, many, 2);
    expect(state.live.changes).toHaveLength(MAX_CHANGES);
    expect(state.live.changes[0]?.service).toBe(`shop/s${MAX_CHANGES + 19}`);
    const same = applyEvents(state, [event(WatchEventType.KEEPALIVE, "", "", 3n)], 3);
    expect(same.live).toBe(state.live);
    const newer = applyEvents(state, [event(WatchEventType.KEEPALIVE, "", "", 500n)], 3);
    expect(newer.live.revision).toBe(500n);
  });
});
