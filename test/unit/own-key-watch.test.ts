/**
 * The export controller's watched view of its own keys over the embedded
 * store, with the watch's events held back and released by the test, so
 * that every order of a write's event and its promise is played: an own
 * write is never reported as foreign, a change its write replaces is not
 * either, and a foreign change after it always is, whichever comes first.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import { projectionContent } from "../../services/common/projection-content.js";
import { contentDigest } from "../../services/registrar/export/export-plan.js";
import type { OwnKeyChange } from "../../services/registrar/export/own-key-change.js";
import { listOwnKeys, type OwnKeys } from "../../services/registrar/export/own-key-watch.js";
import {
  type ConfigStore,
  StoreCompactedError,
  type StoreEvent,
  StoreUnavailableError,
  type StoreWatch,
  type WatchHandler,
} from "../../services/registrar/store/config-store.js";
import {
  createMemoryBackend,
  createMemoryStore,
} from "../../services/registrar/store/memory-store.js";
import { createSilentLogger } from "../../services/runtime/logger.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { waitFor } from "../support/wait.js";

const opened: OwnKeys[] = [];
afterEach(() => {
  for (const own of opened.splice(0)) own.cancel();
});

/**
 * The hub's store, another writer of its keys on the same backend, and a
 * store whose watch holds events until `release()` (or fails on `fail()`),
 * recording the revision each watch starts after.
 */
function setup() {
  const backend = createMemoryBackend();
  const inner = createMemoryStore({ origin: "hub", backend });
  const other = createMemoryStore({ origin: "hub", backend });
  const held: StoreEvent[] = [];
  const starts: number[] = [];
  let current: { handler: WatchHandler; watch: StoreWatch } | undefined;
  const store: ConfigStore = {
    ...inner,
    watch: (after, handler, filter) => {
      expect(filter).toEqual({ origin: "hub" });
      starts.push(after);
      const watch = inner.watch(
        after,
        { onEvents: (events) => held.push(...events), onError: handler.onError },
        filter,
      );
      current = { handler, watch };
      return watch;
    },
  };
  const foreign: string[] = [];
  const errors: Error[] = [];
  const open = async (): Promise<OwnKeys> => {
    const own = await listOwnKeys({
      store,
      logger: createSilentLogger(),
      retry: { initialMs: 1, maxMs: 2 },
      onForeign: (service) => foreign.push(service),
      onError: (error) => errors.push(error),
    });
    opened.push(own);
    own.follow();
    return own;
  };
  /** Waits until `count` events are held, then delivers them (all, in order). */
  const release = async (count: number): Promise<void> => {
    await waitFor(() => held.length >= count, 2_000, `${count} held events`);
    current?.handler.onEvents(held.splice(0));
  };
  /** Ends the current watch with `error`, as a store does. */
  const fail = async (error: Error): Promise<void> => {
    const failing = current;
    await failing?.watch.cancel();
    held.splice(0);
    failing?.handler.onError(error);
  };
  return { inner, other, foreign, errors, starts, open, release, fail };
}

/** The change the controller expects of writing `p` at `version`. */
const putOf = (p: ServiceConfigProjection, version: string): OwnKeyChange => ({
  type: "put",
  digest: contentDigest(projectionContent(p)),
  version,
  seal: "",
});

/** The view entry of `p` stored at `version`. */
const entryOf = (p: ServiceConfigProjection, version: string) => ({
  digest: contentDigest(projectionContent(p)),
  version,
  seal: "",
});

/** Puts `p` at `version` through `store`, expecting it first, as the controller does. */
async function ownPut(
  own: OwnKeys,
  store: ConfigStore,
  p: ServiceConfigProjection,
  version: string,
) {
  const token = own.expect(p.service, putOf(p, version));
  const landed = store.put({ ...p, version });
  return { token, landed };
}

const CHECKOUT = makeProjection("shop/checkout");
const FORGED = makeProjection("shop/checkout", { backend: "rogue/sink" });

describe("own key watch", () => {
  it("lists the view, then reports a foreign put, a foreign delete and a key it did not hold", async () => {
    const t = setup();
    await t.inner.put({ ...CHECKOUT, version: versionAt(1) });
    const own = await t.open();
    expect(own.view.get("shop/checkout")).toEqual(entryOf(CHECKOUT, versionAt(1)));

    await t.other.put({ ...FORGED, version: versionAt(1) });
    await t.release(1);
    expect(t.foreign).toEqual(["shop/checkout"]);
    expect(own.view.get("shop/checkout")).toEqual(entryOf(FORGED, versionAt(1)));

    await t.other.delete("shop/checkout");
    await t.other.put(makeProjection("rogue/extra"));
    await t.release(2);
    expect(t.foreign).toEqual(["shop/checkout", "shop/checkout", "rogue/extra"]);
    expect([...own.view.keys()]).toEqual(["rogue/extra"]);
  });

  it("an own put whose event arrives before its promise resolves is its own", async () => {
    const t = setup();
    const own = await t.open();
    const { token, landed } = await ownPut(own, t.inner, CHECKOUT, versionAt(2));
    await t.release(1); // the event first
    expect(t.foreign).toEqual([]);
    expect(own.view.get("shop/checkout")).toEqual(entryOf(CHECKOUT, versionAt(2)));
    await landed;
    own.landed("shop/checkout", token);
    expect(own.view.get("shop/checkout")).toEqual(entryOf(CHECKOUT, versionAt(2)));
    // The expectation is gone: a forged copy of the same version is foreign.
    await t.other.put({ ...FORGED, version: versionAt(2) });
    await t.release(1);
    expect(t.foreign).toEqual(["shop/checkout"]);
  });

  it("a foreign put after the own put's event but before its promise resolves is not overwritten by it", async () => {
    const t = setup();
    const own = await t.open();
    const { token, landed } = await ownPut(own, t.inner, CHECKOUT, versionAt(2));
    await landed;
    await t.other.put({ ...FORGED, version: versionAt(3) });
    await t.release(2); // the own event, then the foreign one
    own.landed("shop/checkout", token); // the promise resolves last
    expect(t.foreign).toEqual(["shop/checkout"]);
    expect(own.view.get("shop/checkout")).toEqual(entryOf(FORGED, versionAt(3)));
  });

  it("a foreign put the own write replaced is not reported, even when its event arrives after the write resolved", async () => {
    const t = setup();
    const own = await t.open();
    await t.other.put({ ...FORGED, version: versionAt(1) });
    const { token, landed } = await ownPut(own, t.inner, CHECKOUT, versionAt(2));
    await landed;
    own.landed("shop/checkout", token);
    expect(own.view.get("shop/checkout")).toEqual(entryOf(CHECKOUT, versionAt(2)));
    await t.release(2);
    expect(t.foreign).toEqual([]);
    expect(own.view.get("shop/checkout")).toEqual(entryOf(CHECKOUT, versionAt(2)));
  });

  it("an own delete is its own; one that found nothing to delete leaves no expectation behind", async () => {
    const t = setup();
    await t.inner.put({ ...CHECKOUT, version: versionAt(1) });
    const own = await t.open();
    const token = own.expect("shop/checkout", { type: "delete" });
    const revision = await t.inner.delete("shop/checkout");
    own.landed("shop/checkout", token, revision !== undefined);
    await t.release(1);
    expect(t.foreign).toEqual([]);
    expect(own.view.has("shop/checkout")).toBe(false);

    const nothing = own.expect("web/frontend", { type: "delete" });
    expect(await t.inner.delete("web/frontend")).toBeUndefined();
    own.landed("web/frontend", nothing, false);
    await t.other.put(makeProjection("web/frontend"));
    await t.release(1);
    expect(t.foreign).toEqual(["web/frontend"]);
  });

  it("watches only once asked to, from the listing's revision", async () => {
    const t = setup();
    await t.inner.put({ ...CHECKOUT, version: versionAt(1) });
    const listed = await t.inner.revision();
    const own = await listOwnKeys({
      store: t.inner,
      logger: createSilentLogger(),
      retry: { initialMs: 1, maxMs: 2 },
      onForeign: (service) => t.foreign.push(service),
      onError: () => {},
    });
    opened.push(own);
    await t.other.put({ ...FORGED, version: versionAt(2) });
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.foreign).toEqual([]);
    own.follow();
    own.follow();
    await waitFor(() => t.foreign.length > 0);
    expect(t.foreign).toEqual(["shop/checkout"]);
    expect(own.view.get("shop/checkout")).toEqual(entryOf(FORGED, versionAt(2)));
    expect(await t.inner.revision()).toBe(listed + 1);
  });

  it("opens a failed watch again from the last revision it reported: a change while it was down is reported, its own events are not repeated", async () => {
    const t = setup();
    const listed = await t.inner.revision();
    const own = await t.open();
    const { token, landed } = await ownPut(own, t.inner, CHECKOUT, versionAt(2));
    await landed;
    own.landed("shop/checkout", token);
    await t.release(1);
    const seen = await t.inner.revision();
    await t.fail(new StoreUnavailableError("etcd watch: the stream ended"));
    // While no watch is open, another writer deletes the key.
    await t.other.delete("shop/checkout");
    await waitFor(() => t.starts.length === 2, 2_000, "the watch to be opened again");
    expect(t.starts).toEqual([listed, seen]);
    await t.release(1);
    expect(t.foreign).toEqual(["shop/checkout"]);
    expect(own.view.has("shop/checkout")).toBe(false);
    expect(t.errors).toEqual([]);
  });

  it("reports a compacted watch once, and opens no other; nothing is reported after cancel()", async () => {
    const t = setup();
    await t.open();
    const error = new StoreCompactedError("compacted", 5);
    await t.fail(error);
    expect(t.errors).toEqual([error]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.starts).toHaveLength(1);

    const second = await t.open();
    second.cancel();
    await t.other.put(makeProjection("rogue/extra"));
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.errors).toEqual([error]);
    expect(t.foreign).toEqual([]);
  });
});
