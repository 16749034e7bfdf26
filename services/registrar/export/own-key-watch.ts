/**
 * The export controller's view of its own keys, kept in step with the store:
 * listed once, then followed by a watch of the own origin's keys from the
 * listing's revision. The controller's writes update the view as they land;
 * the watch recognises their events (see `own-key-change.ts`) and applies
 * everything else, reporting each service someone else changed, so that the
 * controller can repair it.
 */
import type { Logger } from "../../runtime/logger.js";
import type { ConfigStore, StoreEvent, StoreWatch } from "../store/config-store.js";
import { type ExportView, storedDigest, storedView } from "./export-plan.js";
import { classifyOwnKeyChange, type OwnKeyChange } from "./own-key-change.js";

/** Options of {@link listOwnKeys}. */
export interface OwnKeysOptions {
  /** The store; its own origin's keys are listed and watched. */
  readonly store: ConfigStore;
  /** Called with each service another writer changed (after the view took the change). */
  readonly onForeign: (service: string) => void;
  /**
   * Called once when the watch ends (compaction, store unreachable): the view
   * is no longer followed and must be listed again. Not called after `cancel()`.
   */
  readonly onError: (error: Error) => void;
  /** Where foreign changes are logged, at debug level. */
  readonly logger: Logger;
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
  /** The error the watch ended with, once it has (`onError` was called); undefined before. */
  readonly ended: Error | undefined;
  /** Stops the watch; no callback runs afterwards. Idempotent. */
  cancel(): void;
}

/**
 * Lists the store's own-origin projections and watches them from the
 * listing's revision. Rejects when the listing fails.
 */
export async function listOwnKeys(options: OwnKeysOptions): Promise<OwnKeys> {
  const { store, onForeign, onError, logger } = options;
  const listing = await store.list({ origin: store.origin });
  const view = storedView(listing.entries);
  /** The change each pending write is to make, by service, until the watch reports it. */
  const expected = new Map<string, OwnKeyChange>();
  let active = true;
  let ended: Error | undefined;

  const apply = (service: string, change: OwnKeyChange): void => {
    if (change.type === "put")
      view.set(service, { digest: change.digest, version: change.version });
    else view.delete(service);
  };
  const onEvents = (events: StoreEvent[]): void => {
    for (const event of events) {
      if (!active) return;
      const service = event.type === "put" ? event.entry.service : event.service;
      const change = observed(event);
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
  const watch: StoreWatch = store.watch(
    listing.revision,
    {
      onEvents,
      onError: (error) => {
        if (!active) return;
        active = false;
        ended = error;
        onError(error);
      },
    },
    { origin: store.origin },
  );

  return {
    view,
    get ended() {
      return ended;
    },
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
    cancel() {
      if (!active) return;
      active = false;
      watch.cancel().catch(() => {}); // nothing to do: it is over either way
    },
  };
}

/** The change an event reports, with a put's content digest. */
function observed(event: StoreEvent): OwnKeyChange {
  if (event.type === "delete") return { type: "delete" };
  return { type: "put", digest: storedDigest(event.entry), version: event.entry.version };
}
