/**
 * Whether the agent's calls to its registrar fail on trust (a certificate
 * refused by either side, a failed TLS handshake, PermissionDenied), as
 * `/readyz` reports it: the last trust failure stands until a call
 * succeeds. Other failures (unreachable, a timeout) leave it as it is: they
 * say nothing about trust. Calls the agent cancelled itself are not
 * observed. Injectable clock; no I/O.
 */
import {
  type TrustFailure,
  trustFailureOf,
} from "../../services/runtime/tls/registrar-call-failure.js";

/** A trust failure and when it was first seen in a row, in milliseconds since the epoch. */
export interface StandingTrustFailure extends TrustFailure {
  readonly since: number;
}

/** See {@link createRegistrarTrust}. */
export interface RegistrarTrust {
  /** The trust failure standing now; undefined when the last call that said anything about trust succeeded. */
  readonly failure: StandingTrustFailure | undefined;
  /** Observes a failed call: a trust failure stands (counted through `onFailure`). */
  failed(error: unknown): void;
  /** Observes a call that succeeded: no trust failure stands. */
  succeeded(): void;
  /** `/readyz`'s reason while a failure stands, else undefined. */
  notReadyReason(): string | undefined;
}

/** Options of {@link createRegistrarTrust}. */
export interface RegistrarTrustOptions {
  readonly now: () => number;
  /** Called for each failed call that failed on trust (a metric by reason, a log line when it is new). */
  readonly onFailure?: (failure: TrustFailure, isNew: boolean) => void;
  /** Called when a call succeeds after a trust failure. */
  readonly onRecovered?: () => void;
}

/** Creates the trust state of one registrar connection. */
export function createRegistrarTrust(options: RegistrarTrustOptions): RegistrarTrust {
  let failure: StandingTrustFailure | undefined;
  return {
    get failure() {
      return failure;
    },
    failed(error) {
      const found = trustFailureOf(error);
      if (found === undefined) return;
      const isNew = failure?.reason !== found.reason || failure.message !== found.message;
      failure = { ...found, since: isNew ? options.now() : (failure?.since ?? options.now()) };
      options.onFailure?.(found, isNew);
    },
    succeeded() {
      if (failure === undefined) return;
      failure = undefined;
      options.onRecovered?.();
    },
    notReadyReason() {
      if (failure === undefined) return undefined;
      const since = new Date(failure.since).toISOString();
      return `the registrar connection fails on trust since ${since} (${failure.reason}): ${failure.message}; serving the last-known route table`;
    },
  };
}
