/**
 * How one etcd request is spread over the members of a cluster: the deadline
 * of each attempt, and whether a failed attempt is tried again. etcd3 sends
 * each attempt to a member picked at random among those not set aside
 * (etcd-host-breaker.ts). A member that is frozen or cut off while its
 * connection stays open answers nothing, so an attempt that went to it can
 * only end at its deadline: with one deadline for the whole request (what
 * etcd3's own retry does, reusing the request's absolute deadline) the first
 * attempt used all the time, and the retry on a healthy member failed at
 * once, setting that member aside too. Here every attempt but the last gets
 * a share of the request's time, so a silent member costs a short, bounded
 * detour, and the last attempt gets whatever is left.
 *
 * A write (a request that makes a revision) is tried again only when its
 * attempt never left this process (no connection to the member it picked:
 * gRPC fails such a call before it opens a stream), since a write that may
 * have reached a member may also have applied; etcd's Go client draws the
 * same line. Each of its attempts gets all the time left, as one attempt
 * with the whole deadline did. Synchronous and free of I/O.
 */

/** The shortest deadline an attempt is given while others may follow, in milliseconds. */
export const MIN_ATTEMPT_MS = 300;

/** The least time left worth another attempt, in milliseconds. */
export const MIN_RETRY_MS = 100;

/** Where a request is: how many attempts failed so far, and how long they took. */
export interface AttemptState {
  /** The etcd endpoints the client was given; at least one. */
  readonly endpointCount: number;
  /** The bound on the whole request, in milliseconds. */
  readonly timeoutMs: number;
  /** How many attempts were made (0 before the first). */
  readonly attempts: number;
  /** The time spent so far, in milliseconds. */
  readonly elapsedMs: number;
  /**
   * Whether the last failed attempt counts against its member (no answer in
   * time, unreachable; see `failsHost`); ignored before the first attempt.
   */
  readonly lastFailedHost: boolean;
  /** Whether the request makes a revision (see the module comment); default false. */
  readonly write?: boolean;
  /** Whether the last failed attempt never left this process; ignored before the first attempt. */
  readonly lastUnsent?: boolean;
}

/**
 * The next attempt of a request: `{ deadlineMs }` (relative to now) or
 * undefined when the request has failed for good. The first attempt is
 * always made. Another follows only after a failure that counts against the
 * member (an answer that refuses the request is final; for a write, only
 * after an attempt that was never sent), with fewer attempts
 * than endpoints made and at least {@link MIN_RETRY_MS} left. An attempt
 * that may be followed by another gets an equal share of the request's time
 * (at least {@link MIN_ATTEMPT_MS}); the last possible one gets all that is left.
 */
export function planNextAttempt(state: AttemptState): { deadlineMs: number } | undefined {
  const { endpointCount, timeoutMs, attempts, elapsedMs } = state;
  const left = timeoutMs - elapsedMs;
  const write = state.write === true;
  if (attempts > 0) {
    const retryable = write ? state.lastUnsent === true : state.lastFailedHost;
    if (!retryable || attempts >= endpointCount || left < MIN_RETRY_MS) return undefined;
  }
  const isLast = write || attempts + 1 >= endpointCount;
  if (isLast) return { deadlineMs: Math.max(left, 0) };
  const share = Math.max(MIN_ATTEMPT_MS, Math.floor(timeoutMs / endpointCount));
  return { deadlineMs: Math.max(Math.min(share, left), 0) };
}
