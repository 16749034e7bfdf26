/**
 * The decisions of the etcd leader election (etcd-leader-election.ts) that
 * need no etcd and no clock: lease and keep-alive timing, the retry
 * schedule, the campaign key, and who leads given what etcd answered. Every
 * function here is synchronous and pure.
 */
import type { BackoffOptions } from "../../runtime/backoff.js";

/**
 * Returns the lease TTL to ask etcd for, in whole seconds: `ttlMs` rounded
 * up, at least one second.
 */
export function leaseTtlSeconds(ttlMs: number): number {
  return Math.max(1, Math.ceil(ttlMs / 1000));
}

/**
 * Returns the options of the election's retry backoff for a lease TTL of
 * `ttlSeconds`: from 100 ms, doubling up to the TTL but never over five
 * seconds, jittered with `random` when given (else `createBackoff`'s default).
 */
export function electionBackoffOptions(
  ttlSeconds: number,
  random: (() => number) | undefined,
): BackoffOptions {
  return {
    initialMs: 100,
    maxMs: Math.min(5_000, ttlSeconds * 1_000),
    ...(random === undefined ? {} : { random }),
  };
}

/**
 * Returns how often a lease of `ttlMs` milliseconds is renewed: three times
 * per TTL, but not more often than every 100 ms.
 */
export function keepAliveIntervalMs(ttlMs: number): number {
  return Math.max(100, ttlMs / 3);
}

/**
 * Whether a keep-alive stream has stalled: its oldest unanswered keep-alive
 * (sent at `oldestSentAt`; undefined when every one was answered) has waited
 * a whole renewal interval. A member that is frozen or cut off keeps its
 * stream open and answers nothing; the stream is then opened again (on a
 * member that answers) while the lease still has two thirds of its TTL.
 */
export function keepAliveStalled(
  oldestSentAt: number | undefined,
  now: number,
  ttlMs: number,
): boolean {
  return oldestSentAt !== undefined && now - oldestSentAt >= keepAliveIntervalMs(ttlMs);
}

/**
 * Returns until when a lease is proven alive after etcd answered a
 * keep-alive sent at `sentAt` with `answeredTtl` (etcd's TTL in seconds, as
 * a decimal string): `answeredTtl` seconds after `sentAt`, never earlier
 * than the current `validUntil`. Returns undefined when etcd answers TTL 0,
 * which means the lease has expired.
 */
export function leaseValidUntil(
  validUntil: number,
  sentAt: number,
  answeredTtl: string,
): number | undefined {
  if (answeredTtl === "0") return undefined;
  return Math.max(validUntil, sentAt + Number(answeredTtl) * 1_000);
}

/** Returns the campaign key of the candidate holding lease `leaseId` (decimal): `<name>/<lease id in hex>`. */
export function campaignKey(name: string, leaseId: string): string {
  return `${name}/${BigInt(leaseId).toString(16)}`;
}

/** The parts of the campaign transaction's response that {@link campaignCreateRevision} reads. */
export interface CampaignTxnResult {
  /** True when the key was created by the transaction. */
  readonly succeeded: boolean;
  /** The revision of the transaction. */
  readonly header: { readonly revision: string };
  /** When the key already existed: the range read of it. */
  readonly responses: readonly {
    readonly response_range: { readonly kvs: readonly { readonly create_revision: string }[] };
  }[];
}

/**
 * Returns the creation revision of the campaign key after the campaign
 * transaction (create the key unless it exists, else read it): the
 * transaction's revision when it created the key, the existing key's
 * creation revision otherwise, and undefined when neither is there (the key
 * vanished right after it was written).
 */
export function campaignCreateRevision(result: CampaignTxnResult): number | undefined {
  const createRevision = result.succeeded
    ? Number(result.header.revision)
    : Number(result.responses[0]?.response_range.kvs[0]?.create_revision ?? Number.NaN);
  return Number.isSafeInteger(createRevision) ? createRevision : undefined;
}

/**
 * The parts of a range response {@link predecessorToWaitFor} reads: the
 * candidate keys created before this candidate's, newest first, at most one.
 */
export interface PredecessorListing {
  /** The revision the listing was read at. */
  readonly header: { readonly revision: string };
  /** The newest earlier candidate key, or none. */
  readonly kvs: readonly { readonly key: Buffer }[];
}

/** The key a candidate waits for to be deleted, and the revision to watch from. */
export interface Predecessor {
  /** The candidate key created just before this candidate's. */
  readonly key: Buffer;
  /** The first revision after the listing. */
  readonly startRevision: number;
}

/**
 * Decides from the listing of earlier candidate keys whether this
 * candidate leads: undefined when no earlier key exists (it leads), else
 * the newest earlier key to wait for, watched from just after the listing.
 */
export function predecessorToWaitFor(listing: PredecessorListing): Predecessor | undefined {
  const predecessor = listing.kvs[0];
  if (predecessor === undefined) return undefined;
  return { key: predecessor.key, startRevision: Number(listing.header.revision) + 1 };
}
