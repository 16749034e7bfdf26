/**
 * The raw etcd calls the etcd store and the export election share: an etcd3
 * client used for its connection handling only (its unsafe defaults
 * replaced), one request with a deadline and the store's errors, key ranges
 * and the safe closing of a raw stream. Raw watch streams are in
 * etcd-watch.ts.
 */
import { BrokenCircuitError, noop } from "cockatiel";
import {
  ClientClosedError,
  Etcd3,
  GRPCDeadlineExceededError,
  GRPCGenericError,
  type IDuplexStream,
  type ILeaseKeepAliveRequest,
  type ILeaseKeepAliveResponse,
  type IOptions,
  type IWatchRequest,
  type IWatchResponse,
  isRecoverableError,
} from "etcd3";
import { type EtcdSecurity, etcdSecurityOptions } from "../../runtime/etcd-security.js";
import { FencedWriteError, StoreCompactedError, StoreUnavailableError } from "./config-store.js";
import { planNextAttempt } from "./etcd-attempt-plan.js";
import { failsHost, hostFaultPolicy } from "./etcd-host-breaker.js";

const FUTURE = "required revision is a future revision";

/** A raw stream on one member, and what sets that member aside; see {@link EtcdClient}. */
export interface MemberStream<Request, Response> {
  /** The raw bidirectional stream. */
  readonly stream: IDuplexStream<Request, Response>;
  /**
   * Sets the member the stream went to aside (its breaker opens, as after a
   * call it did not answer), so that the next call or stream goes to
   * another member: for a stream found silent. Never throws.
   */
  setMemberAside(reason: string): void;
}

/**
 * An etcd3 client (made by {@link createEtcdClient}) that knows how many
 * endpoints it has (what {@link callEtcd} spreads a request over) and opens
 * raw watch and lease keep-alive streams knowing the member each went to.
 */
export class EtcdClient extends Etcd3 {
  /** How many endpoints the client was given. */
  readonly endpointCount: number;

  constructor(options: IOptions, endpointCount: number) {
    super(options);
    this.endpointCount = endpointCount;
  }

  /** Opens a raw watch stream; see {@link EtcdClient.openMemberStream}. */
  openWatchStream(): Promise<MemberStream<IWatchRequest, IWatchResponse>> {
    return this.openMemberStream("Watch", (client, metadata) =>
      (client as StreamServiceClient).watch(metadata, {}),
    );
  }

  /** Opens a raw lease keep-alive stream; see {@link EtcdClient.openMemberStream}. */
  openLeaseKeepAliveStream(): Promise<
    MemberStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse>
  > {
    return this.openMemberStream("Lease", (client, metadata) =>
      (client as StreamServiceClient).leaseKeepAlive(metadata, {}),
    );
  }

  /**
   * Opens a raw stream of `service` on a member not set aside (picked at
   * random), as etcd3's own stream methods do (a stream error sets the
   * member aside when it counts against it), and resolves with the stream
   * and the function that sets its member aside. Rejects when every member
   * is set aside or the client is closed.
   */
  private openMemberStream<Request, Response>(
    service: "Watch" | "Lease",
    open: (client: unknown, metadata: unknown) => IDuplexStream<Request, Response>,
  ): Promise<MemberStream<Request, Response>> {
    const pool = this.pool;
    return pool.withConnection(service, ({ resource, client, metadata }) => {
      const stream = open(client, metadata);
      stream.on("error", (error: Error) => {
        if ((stream as unknown as { writable: boolean }).writable) pool.markFailed(resource, error);
      });
      const setMemberAside = (reason: string): void => {
        try {
          pool.markFailed(resource, new GRPCDeadlineExceededError(reason));
        } catch {
          // The pool is closed; there is nothing to set aside.
        }
      };
      return Promise.resolve({ stream, setMemberAside });
    });
  }
}

/** The gRPC service clients etcd3's pool hands out (their stream methods only). */
interface StreamServiceClient {
  watch(metadata: unknown, options: object): IDuplexStream<IWatchRequest, IWatchResponse>;
  leaseKeepAlive(
    metadata: unknown,
    options: object,
  ): IDuplexStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse>;
}

/**
 * Creates an etcd3 client used for its connection handling only, with
 * etcd3's dangerous defaults replaced: no circuit breaker with one endpoint
 * (etcd3's would refuse every call for five seconds after three failures,
 * long after etcd is back), and with several a member that did not answer
 * set aside for a short, growing while (etcd-host-breaker.ts), no retry
 * of its own (callEtcd retries on the other members, see
 * etcd-attempt-plan.ts), and a reconnect backoff of at most one second. Callers make every request through {@link callEtcd} and every
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
): EtcdClient {
  if (endpoints.length === 0) throw new TypeError("at least one etcd endpoint is needed");
  return new EtcdClient(
    {
      hosts: [...endpoints],
      ...etcdSecurityOptions(security),
      faultHandling: {
        // With one endpoint no circuit breaker (it would refuse calls for seconds after etcd
        // is back); with several, a member that does not answer is set aside for a while.
        host: hostFaultPolicy(endpoints.length),
        // No retry by etcd3 (it would reuse the request's deadline, already past after a
        // silent member): callEtcd retries on the other members, each attempt with its own.
        global: noop,
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
    },
    endpoints.length,
  );
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
 * Runs one etcd request within `timeoutMs` (deadlines enforced by gRPC and,
 * as a safety net, by a timer), spread over at most `endpointCount` members
 * as etcd-attempt-plan.ts says: an attempt that gets no answer in its share
 * of the time sets its member aside and is tried again on another one. With
 * `endpointCount` 1 (the default) it is one attempt with the whole
 * deadline; a `write` (a timed-out write may still apply) is tried again
 * only when its attempt was never sent ({@link neverSent}). Rejects with
 * the error {@link translateEtcdError} makes of the last failure: an
 * unreachable or frozen etcd rejects with {@link StoreUnavailableError}
 * within `timeoutMs`. `request` is called once per attempt, with that
 * attempt's deadline.
 */
export async function callEtcd<T>(
  what: string,
  timeoutMs: number,
  request: (callOptions: { deadline: number }) => Promise<T>,
  endpointCount = 1,
  write = false,
): Promise<T> {
  const started = Date.now();
  let attempts = 0;
  let lastError: unknown;
  let lastFailedHost = false;
  let lastUnsent = false;
  for (;;) {
    const elapsedMs = Date.now() - started;
    const plan = planNextAttempt({
      endpointCount,
      timeoutMs,
      attempts,
      elapsedMs,
      lastFailedHost,
      write,
      lastUnsent,
    });
    if (plan === undefined) throw translateEtcdError(lastError, what);
    attempts++;
    try {
      return await attemptEtcd(what, plan.deadlineMs, request);
    } catch (error) {
      lastError = error;
      lastFailedHost = error instanceof AttemptTimeoutError || failsHost(error);
      lastUnsent = neverSent(error);
    }
  }
}

/**
 * Whether a failed call never left this process: gRPC found no connection
 * to the member it picked (the member is down or refuses connections) and
 * failed the call before opening a stream (grpc-js's "No connection
 * established"). Such a call is safe to send again, even a write.
 */
export function neverSent(error: unknown): boolean {
  return error instanceof Error && error.message.includes("No connection established");
}

/** An attempt that the safety-net timer ended (gRPC's deadline did not). */
class AttemptTimeoutError extends StoreUnavailableError {}

/** One attempt of {@link callEtcd}: `request` with a deadline of `deadlineMs`, and a timer behind it. */
async function attemptEtcd<T>(
  what: string,
  deadlineMs: number,
  request: (callOptions: { deadline: number }) => Promise<T>,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new AttemptTimeoutError(`etcd ${what} took over ${deadlineMs} ms`)),
      deadlineMs + 100,
    );
  });
  try {
    return await Promise.race([request({ deadline: Date.now() + deadlineMs }), timeout]);
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
