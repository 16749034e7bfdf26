/**
 * The raw etcd calls the etcd store and the export election share: an etcd3
 * client used for its connection handling only (its unsafe defaults
 * replaced), one request with a deadline and the store's errors, key ranges
 * and the safe closing of a raw stream. Raw watch streams are in
 * etcd-watch.ts.
 */
import { BrokenCircuitError, handleWhen, noop, retry } from "cockatiel";
import {
  ClientClosedError,
  Etcd3,
  GRPCGenericError,
  type IDuplexStream,
  isRecoverableError,
} from "etcd3";
import { type EtcdSecurity, etcdSecurityOptions } from "../../runtime/etcd-security.js";
import { FencedWriteError, StoreCompactedError, StoreUnavailableError } from "./config-store.js";
import { hostFaultPolicy } from "./etcd-host-breaker.js";

const FUTURE = "required revision is a future revision";

/**
 * Creates an etcd3 client used for its connection handling only, with
 * etcd3's dangerous defaults replaced: no circuit breaker with one endpoint
 * (etcd3's would refuse every call for five seconds after three failures,
 * long after etcd is back), and with several a member that did not answer
 * set aside for a short, growing while (etcd-host-breaker.ts), a retry
 * only on the other endpoints, and a reconnect backoff of at most one
 * second. Callers make every request through {@link callEtcd} and every
 * watch through `openEtcdWatch` (etcd-watch.ts), never through etcd3's
 * builders, watchers, leases or elections (which retry and reconnect on their
 * own). `security` adds TLS (`credentials`) and etcd authentication (`auth`).
 *
 * gRPC shares one HTTP/2 connection among every client of the process whose
 * channel options are equal, so without `purpose` every etcd3 client here
 * rides one connection to each endpoint. A `purpose` (a short word) names
 * the client in its user agent, which makes its options differ: clients of
 * different purposes get connections of their own, and one purpose's
 * requests can never queue in front of another's (the config cache's health
 * pings and watch are kept apart from the reads made for requests so).
 */
export function createEtcdClient(
  endpoints: readonly string[],
  security?: EtcdSecurity,
  purpose?: string,
): Etcd3 {
  if (endpoints.length === 0) throw new TypeError("at least one etcd endpoint is needed");
  return new Etcd3({
    hosts: [...endpoints],
    ...etcdSecurityOptions(security),
    faultHandling: {
      // With one endpoint no circuit breaker (it would refuse calls for seconds after etcd
      // is back); with several, a member that does not answer is set aside for a while.
      host: hostFaultPolicy(endpoints.length),
      // Retry a failed call on the other endpoints only, within the same deadline.
      global:
        endpoints.length > 1
          ? retry(handleWhen(isRecoverableError), { maxAttempts: endpoints.length - 1 })
          : noop,
    },
    grpcOptions: {
      // gRPC's reconnect backoff grows to two minutes by default; a restarted
      // etcd must be usable again within a second.
      "grpc.initial_reconnect_backoff_ms": 100,
      "grpc.max_reconnect_backoff_ms": 1_000,
      // gRPC refuses responses over 4 MiB by default; a batch of large
      // projections must not turn into a permanent "unavailable".
      "grpc.max_receive_message_length": 256 * 1024 * 1024,
      ...(purpose === undefined
        ? {}
        : { "grpc.primary_user_agent": `aether-registrar-${purpose}` }),
    },
  });
}

/**
 * Maps an etcd client error to the store's errors: connection and gRPC
 * errors, and a call refused because every member is set aside, become
 * {@link StoreUnavailableError} (naming `what`), a read in the
 * future a RangeError; the store's own errors pass through unchanged.
 */
export function translateEtcdError(error: unknown, what: string): Error {
  if (
    error instanceof StoreUnavailableError ||
    error instanceof StoreCompactedError ||
    error instanceof FencedWriteError ||
    error instanceof RangeError
  ) {
    return error;
  }
  const message = error instanceof Error ? error.message : String(error);
  if (message.includes(FUTURE)) return new RangeError(`etcd ${what}: ${message}`);
  if (
    error instanceof BrokenCircuitError ||
    error instanceof ClientClosedError ||
    error instanceof GRPCGenericError ||
    (error instanceof Error && (isRecoverableError(error) || "code" in error))
  ) {
    return new StoreUnavailableError(`etcd ${what} failed: ${message}`, { cause: error });
  }
  return error instanceof Error ? error : new Error(message);
}

/**
 * Runs one etcd request with a deadline of `timeoutMs` (enforced by gRPC
 * and, as a safety net, by a timer) and rejects with the error
 * {@link translateEtcdError} makes of a failure: an unreachable or frozen
 * etcd rejects with {@link StoreUnavailableError} within the deadline.
 */
export async function callEtcd<T>(
  what: string,
  timeoutMs: number,
  request: (callOptions: { deadline: number }) => Promise<T>,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new StoreUnavailableError(`etcd ${what} took over ${timeoutMs} ms`)),
      timeoutMs + 100,
    );
  });
  try {
    return await Promise.race([request({ deadline: Date.now() + timeoutMs }), timeout]);
  } catch (error) {
    throw translateEtcdError(error, what);
  } finally {
    clearTimeout(timer);
  }
}

/** Returns the end of the key range of every key starting with `keyPrefix`. */
export { prefixEnd } from "../../runtime/etcd-key-range.js";

/**
 * Closes a raw etcd stream (a watch or a lease keep-alive). Ending the
 * request side first keeps etcd3 from treating the cancellation as a host
 * failure (which would reset every client of the connection). Never throws.
 */
export function closeStream<Request, Response>(stream: IDuplexStream<Request, Response>): void {
  try {
    stream.end();
    stream.cancel();
  } catch {
    // The stream is already gone; nothing to release.
  }
}
