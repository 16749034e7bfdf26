/**
 * What a client is told when the registrar cannot reach its store. The cause
 * (an etcd endpoint's address, a TLS or authentication failure, a timeout)
 * is the operator's business: it goes to the registrar's log and `/readyz`;
 * the client gets UNAVAILABLE with a sentence that says what to do, and no
 * internal address or host name.
 */
import { Code, ConnectError } from "@connectrpc/connect";

/** The message before the cache's first sync (it names nothing internal, so it is kept). */
const NOT_SYNCED = "the registrar has not synced with the store yet";

/** The message every other store failure becomes. */
export const STORE_UNAVAILABLE_MESSAGE =
  "store unavailable: the registrar cannot reach its config store right now; retry later";

/**
 * The UNAVAILABLE error for a store failure `error`: the not-yet-synced
 * message as it is, anything else {@link STORE_UNAVAILABLE_MESSAGE}.
 */
export function storeUnavailable(error: Error): ConnectError {
  const message = error.message === NOT_SYNCED ? NOT_SYNCED : STORE_UNAVAILABLE_MESSAGE;
  return new ConnectError(message, Code.Unavailable);
}
