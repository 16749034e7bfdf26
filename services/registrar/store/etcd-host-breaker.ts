/**
 * Which etcd member a client should stop asking for a while. etcd3 sends each
 * call to a member picked at random; a member that is frozen or cut off
 * while its connection stays open (SIGSTOP, a partition that drops packets)
 * answers nothing, so without this every third call to a 3-member cluster
 * waits out its deadline, again and again: the cache declares the store
 * lost, the export leader loses its lease, and nothing moves to the healthy
 * members. With several endpoints, one call that gets no answer from a
 * member sets that member aside, and it is tried again after a backoff that
 * grows while it keeps failing; with one endpoint there is nowhere else to
 * go, and nothing is set aside (a breaker would refuse calls after etcd is
 * back).
 */
import {
  ConsecutiveBreaker,
  circuitBreaker,
  ExponentialBackoff,
  handleWhen,
  type IPolicy,
  noop,
} from "cockatiel";
import { GRPCDeadlineExceededError, GRPCUnavailableError, isRecoverableError } from "etcd3";

/** How long a member is set aside after it failed: first, and at most while it keeps failing. */
export const HOST_SET_ASIDE_MS = { first: 500, max: 4_000 } as const;

/**
 * Whether a failed call counts against the member it went to: it did not
 * answer within the deadline, or could not be reached (etcd3's recoverable
 * errors). An answer that refuses the request (a compacted revision, a
 * failed comparison, a permission) says the member is fine.
 */
export function failsHost(error: unknown): boolean {
  return (
    error instanceof GRPCDeadlineExceededError ||
    error instanceof GRPCUnavailableError ||
    (error instanceof Error && isRecoverableError(error))
  );
}

/**
 * The per-member fault policy of an etcd3 client of `endpointCount`
 * endpoints (its `faultHandling.host`): with two or more, a breaker that
 * opens on one {@link failsHost} failure and half-opens after
 * {@link HOST_SET_ASIDE_MS} (growing exponentially while the trial call fails);
 * with one, no policy.
 */
export function hostFaultPolicy(endpointCount: number): () => IPolicy {
  if (endpointCount < 2) return () => noop;
  return () =>
    circuitBreaker(handleWhen(failsHost), {
      halfOpenAfter: new ExponentialBackoff({
        initialDelay: HOST_SET_ASIDE_MS.first,
        maxDelay: HOST_SET_ASIDE_MS.max,
      }),
      breaker: new ConsecutiveBreaker(1),
    });
}
