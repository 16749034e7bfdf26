/**
 * The export controller's view of its own keys, kept in step with the store:
 * listed once, then followed by a watch of the own origin's keys from the
 * listing's revision. The controller's writes update the view as they land;
 * the watch recognises their events (see `own-key-change.ts`) and applies
 * everything else, reporting each service someone else changed, so that the
 * controller can repair it.
 *
 * - The watch starts when the controller asks (after the reconcile that
 *   listed has written, so that a cold export of thousands of services does
 *   not share the CPU with its own events, and a busy event loop does not
 *   time the watch's start out); it starts from the listing's revision, so
 *   nothing is missed.
 * - A watch that fails (store unreachable, stream cancelled, start timed
 *   out) is opened again after a backoff, from the last revision it
 *   reported: the view stays valid and nothing is missed. Only a compacted
 *   revision ends the view (`onError`): the controller lists again.
 */
import { type Backoff, type BackoffOptions, createBackoff } from "../../runtime/backoff.js";
import type { Logger } from "../../runtime/logger.js";
import {
  type ConfigStore,
  StoreCompactedError,
  type StoreEvent,
  type StoreWatch,
} from "../store/config-store.js";
import { type ExportView, storedDigest, storedView } from "./export-plan.js";
import type { SealOf } from "./export-seal.js";
import { classifyOwnKeyChange, type OwnKeyChange } from "./own-key-change.js";

/** Options of {@link listOwnKeys}. */
export interface OwnKeysOptions {
  /** The store; its own origin's keys are listed and watched. */
  readonly store: ConfigStore;
  /** Called with each service another writer changed (after the view took the change). */
  readonly onForeign: (service: string) => void;
  /**
   * Called once when the view can no longer be followed (the watch's
   * revision was compacted): it must be listed again. Not called after `cancel()`.
   */
  readonly onError: (error: Error) => void;
  /** Where foreign changes (debug) and watch restarts (warn) are logged. */
  readonly logger: Logger;
  /** The delays before a failed watch is opened again. */
  readonly retry: BackoffOptions;
  /** Who signed a stored value (see `export-seal.ts`); default: every value unsigned. */
  readonly sealOf?: SealOf;
}

/** A listed and watched view; see {@link listOwnKeys}. */
export interface OwnKeys {
  /**
   * What the store holds under the own origin, by service: as listed, then
   * changed by the writes that landed and by the watch's other events.
   */
  readonly view: ExportView;
  /**
   * Records, just before the write is sent, that a write of `service` is to
   * make `change`, and returns the token to pass to {@link OwnKeys.landed}.
   * One write per service at a time.
   */
  expect(service: string, change: OwnKeyChange): OwnKeyChange;
  /**
   * Records that the write of `token` landed (a delete that found nothing to
   * delete passes `deleted` false): the view takes it unless the watch has
   * reported it already (and maybe later changes too).
   */
  landed(service: string, token: OwnKeyChange, deleted?: boolean): void;
  /** Starts the watch, from the listing's revision. Idempotent; nothing after `cancel()`. */
  follow(): void;
  /** Stops the watch (and any restart); no callback runs afterwards. Idempotent. */
  cancel(): void;
}

/**
 * A watch that lived this long before failing worked: the next restart
 * starts from the first delay again.
 */
const HEALTHY_WATCH_MS = 10_000;

/** Lists the store's own-origin projections into a view; rejects when the listing fails. */
export async function listOwnKeys(options: OwnKeysOptions): Promise<OwnKeys> {
  const { store, onForeign, logger } = options;
  const listing = await store.list({ origin: store.origin });
  const sealOf = options.sealOf ?? (() => "");
  const view = storedView(listing.entries, sealOf);
  /** The change each pending write is to make, by service, until the watch reports it. */
  const expected = new Map<string, OwnKeyChange>();

  const apply = (service: string, change: OwnKeyChange): void => {
    if (change.type === "put") {
      view.set(service, { digest: change.digest, version: change.version, seal: change.seal });
    } else view.delete(service);
  };
  const onEvents = (events: StoreEvent[]): void => {
    for (const event of events) {
      const service = event.type === "put" ? event.entry.service : event.service;
      const change = observed(event, sealOf);
      const verdict = classifyOwnKeyChange(change, view.get(service), expected.get(service));
      if (verdict === "own") {
        expected.delete(service);
        apply(service, change);
      } else if (verdict === "foreign") {
        apply(service, change);
        logger.debug(
          { service, change: event.type, revision: event.revision },
          "another writer changed an own key",
        );
        onForeign(service);
      }
    }
  };
  const follower = createFollower(options, listing.revision, onEvents);

  return {
    view,
    expect(service, change) {
      expected.set(service, change);
      return change;
    },
    landed(service, token, deleted = true) {
      if (expected.get(service) !== token) return; // the watch reported it already
      if (token.type === "delete" && !deleted) {
        // Nothing was deleted, so no event follows: the key is gone already.
        expected.delete(service);
        view.delete(service);
        return;
      }
      apply(service, token);
    },
    follow: follower.follow,
    cancel: follower.cancel,
  };
}

/**
 * The watch of the own keys after `revision`, reporting to `onEvents`, opened
 * again from the last revision reported when it fails (see the module
 * comment), ended for good by a compaction (`options.onError`) or `cancel`.
 */
function createFollower(
  options: OwnKeysOptions,
  revision: number,
  onEvents: (events: StoreEvent[]) => void,
): { follow(): void; cancel(): void } {
  const { store, logger } = options;
  const backoff: Backoff = createBackoff(options.retry);
  let state: "idle" | "following" | "over" = "idle";
  let watch: StoreWatch | undefined;
  let timer: NodeJS.Timeout | undefined;
  let last = revision;

  const failed = (error: Error, openedAt: number): void => {
    watch = undefined;
    if (error instanceof StoreCompactedError) {
      state = "over";
      options.onError(error);
      return;
    }
    if (Date.now() - openedAt >= HEALTHY_WATCH_MS) backoff.reset();
    const delay = backoff.next();
    if (backoff.attempts % 10 === 1) {
      logger.warn(
        { err: error.message, retryInMs: Math.round(delay), attempt: backoff.attempts },
        "export watch of own keys failed; watching again",
      );
    }
    timer = setTimeout(open, delay);
  };
  function open(): void {
    timer = undefined;
    if (state !== "following") return;
    const openedAt = Date.now();
    const current: StoreWatch = store.watch(
      last,
      {
        onEvents: (events) => {
          if (watch !== current) return;
          backoff.reset();
          last = (events[events.length - 1] as StoreEvent).revision;
          onEvents(events);
        },
        onError: (error) => {
          if (watch === current) failed(error, openedAt);
        },
      },
      { origin: store.origin },
    );
    watch = current;
  }
  return {
    follow() {
      if (state !== "idle") return;
      state = "following";
      open();
    },
    cancel() {
      state = "over";
      clearTimeout(timer);
      const stopping = watch;
      watch = undefined;
      stopping?.cancel().catch(() => {}); // nothing to do: it is over either way
    },
  };
}

/** The change an event reports, with a put's content digest and seal. */
function observed(event: StoreEvent, sealOf: SealOf): OwnKeyChange {
  if (event.type === "delete") return { type: "delete" };
  const { entry } = event;
  return {
    type: "put",
    digest: storedDigest(entry),
    version: entry.version,
    seal: sealOf(entry.value),
  };
}
