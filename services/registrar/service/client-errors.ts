/**
 * What a client is told when the registrar cannot reach its store. The cause
 * (an etcd endpoint's address, a TLS or authentication failure, a timeout)
 * is the operator's business: it goes to the registrar's log and `/readyz`;
 * the client gets UNAVAILABLE with a sentence that says what to do, and no
 * internal address or host name. A watch stream the registrar itself failed
 * to feed is told to reconnect and resume, also without details.
 */
import { Code, ConnectError } from "@connectrpc/connect";

/** The message before the cache's first sync (it names nothing internal, so it is kept). */
const NOT_SYNCED = "the registrar has not synced with the store yet";

/** The message every other store failure becomes. */
export const STORE_UNAVAILABLE_MESSAGE =
  "store unavailable: the registrar cannot reach its config store right now; retry later";

/**
 * The UNAVAILABLE error for a store failure `error`: the not-yet-synced
 * message (or any message when `notSynced`), anything else
 * {@link STORE_UNAVAILABLE_MESSAGE}.
 */
export function storeUnavailable(error: Error, notSynced = false): ConnectError {
  const message =
    notSynced || error.message === NOT_SYNCED ? NOT_SYNCED : STORE_UNAVAILABLE_MESSAGE;
  return new ConnectError(message, Code.Unavailable);
}

/**
 * The error a watch stream ends with when the cache closed its subscription
 * (its own handling of a change failed; logged by the cache): UNAVAILABLE,
 * which clients retry, resuming from the last revision they applied.
 */
export function subscriptionFailed(): ConnectError {
  return new ConnectError(
    "the registrar failed to send this stream's changes; reconnect and resume from the last revision applied",
    Code.Unavailable,
  );
}
