/**
 * A config cache for watch-stream unit tests: the test drives its state,
 * when it settles, and the changes its one subscriber gets. Not a cache:
 * only what the watch streams use of one.
 */
import type {
  CacheEvent,
  CacheState,
  ConfigCache,
  InitialSync,
  SubscribeOptions,
} from "../../services/registrar/cache/config-cache.js";
import { StoreUnavailableError } from "../../services/registrar/store/config-store.js";

/** An initial sync with nothing in it, at revision 5. */
export const EMPTY: InitialSync = { kind: "snapshot", entries: [], revision: 5 };

/** A cache the test drives: its state, when it settles, and the subscriber it got. */
export function fakeCache(state: CacheState, initial: InitialSync = EMPTY) {
  let settle = () => {};
  const settled = new Promise<void>((resolve) => {
    settle = resolve;
  });
  const availability = new Set<(storeUnavailable: boolean) => void>();
  const fake = {
    state,
    revision: initial.revision,
    subscriber: undefined as SubscribeOptions | undefined,
    unsubscribed: 0,
    /** Whether the cache synced before (it then serves while `unavailable`: the retained view). */
    retained: state === "synced",
  };
  const cache = {
    get state() {
      return fake.state;
    },
    get revision() {
      return fake.revision;
    },
    whenSettled: () => settled,
    onStoreAvailability(listener: (storeUnavailable: boolean) => void) {
      availability.add(listener);
      return () => availability.delete(listener);
    },
    subscribe(options: SubscribeOptions) {
      const serving = fake.state === "synced" || (fake.state === "unavailable" && fake.retained);
      if (!serving) throw new StoreUnavailableError("the cache is not synced");
      fake.subscriber = options;
      return { initial, unsubscribe: () => fake.unsubscribed++ };
    },
  } as unknown as ConfigCache;
  return {
    cache,
    fake,
    settle(to: CacheState) {
      fake.state = to;
      if (to === "synced") fake.retained = true;
      settle();
    },
    /** Loses the store (`true`) or gets it back (`false`) and says so, as the cache does. */
    storeAvailability(storeUnavailable: boolean) {
      fake.state = storeUnavailable ? "unavailable" : "synced";
      for (const listener of availability) listener(storeUnavailable);
    },
    /** Reports changes to the subscriber, as the cache does. */
    emit(...events: CacheEvent[]) {
      fake.subscriber?.onEvents(events);
    },
  };
}

/** A stream gauge, as the metrics keep it. */
export function gauge() {
  const counter = { open: 0 };
  return { counter, metrics: { addWatchStreams: (delta: number) => (counter.open += delta) } };
}

/** A DELETE of `service` from hub at `revision`. */
export const change = (service: string, revision: number): CacheEvent => ({
  type: "delete",
  origin: "hub",
  service,
  revision,
});
