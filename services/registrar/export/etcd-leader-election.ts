/**
 * Leader election over etcd, so that of several registrar replicas of one
 * cluster exactly one exports.
 *
 * It is etcd's own election recipe (the Go client's `concurrency.Election`,
 * which etcd3's `Election` also implements): every candidate holds a lease
 * and a key `<name>/<lease id in hex>` attached to it; the candidate whose key
 * has the lowest creation revision leads; the others each wait for the key
 * just before theirs to be deleted. A leader that dies stops renewing its
 * lease, etcd deletes its key when the lease expires, and the next candidate
 * takes over within the TTL.
 *
 * It is built on raw calls (see etcd-store.ts) instead of etcd3's `Campaign`,
 * whose behaviour in etcd3 1.1.2 is unsafe for this: its lease notices a lost
 * lease only after twice the TTL without an answer (a deposed leader would
 * go on exporting for a whole TTL after another replica took over), its
 * waits use etcd3's watch manager, which reconnects forever and can emit
 * `error` events nobody listens to (which crashes the process), and the
 * client's default circuit breaker refuses every call for five seconds after
 * three failures. Here every request has a deadline, every watch is one raw
 * stream that fails once, and a leader's term ends as soon as its lease can
 * no longer be proven alive: the lease's TTL after the last keep-alive that
 * etcd answered, measured from when it was sent.
 *
 * Each term carries a fence: the leader's key and its creation revision. The
 * store writes only while that key still exists with that revision (an etcd
 * transaction), so even a leader that was frozen past its lease cannot
 * write once it wakes up.
 *
 * This file runs the sessions, one after another, with backoff; the pieces
 * live next to it: one session and its term in etcd-election-session.ts,
 * the lease in etcd-election-lease.ts, the campaign key and the wait for the
 * predecessors in etcd-election-campaign.ts, and the pure rules (timing,
 * retry schedule, who leads) in etcd-election-rules.ts.
 */
import { hostname } from "node:os";
import { createBackoff } from "../../runtime/backoff.js";
import type { EtcdSecurity } from "../../runtime/etcd-security.js";
import { createSilentLogger, type Logger } from "../../runtime/logger.js";
import { sleep } from "../../runtime/sleep.js";
import { createEtcdClient } from "../store/etcd-client.js";
import { DEFAULT_REQUEST_TIMEOUT_MS } from "../store/etcd-store.js";
import { electionBackoffOptions, leaseTtlSeconds } from "./etcd-election-rules.js";
import { runCampaignSession } from "./etcd-election-session.js";
import { createTermKeeper, type LeaderElection } from "./leader-election.js";

/** The default lease TTL of the export election, in milliseconds. */
export const DEFAULT_ELECTION_TTL_MS = 10_000;

/** Options of {@link createEtcdLeaderElection}. */
export interface EtcdLeaderElectionOptions {
  /** The etcd client URLs; at least one. */
  readonly endpoints: readonly string[];
  /**
   * The election: candidates' keys are `<name>/<lease id in hex>`. Use
   * {@link exportElectionName} for the export controller.
   */
  readonly name: string;
  /**
   * The lease TTL in milliseconds, rounded up to whole seconds (at least one);
   * etcd may raise it to its own minimum (two seconds with default settings).
   * Default {@link DEFAULT_ELECTION_TTL_MS}.
   */
  readonly ttlMs?: number;
  /**
   * Elections this candidate defers to: while any key exists under one of
   * them (a candidate of an older release, which campaigns under the old
   * name), it does not lead. Use `legacyExportElectionName` for the export
   * controller, so a rolling upgrade never has two leaders. Default none.
   */
  readonly deferTo?: readonly string[];
  /** What this candidate writes in its key, for operators; default `<hostname>/<pid>`. */
  readonly identity?: string;
  /** Where elections, losses and errors are reported; default silent. */
  readonly logger?: Logger;
  /** The bound on every etcd request, in milliseconds; default 2 s. */
  readonly requestTimeoutMs?: number;
  /** A source of uniform numbers in [0, 1) for retry jitter; default `Math.random`. */
  readonly random?: () => number;
  /** TLS and authentication towards etcd (see etcd-security.ts); default none. */
  readonly security?: EtcdSecurity;
}

export { exportElectionName, legacyExportElectionName } from "../../common/store-layout.js";

/**
 * Creates an etcd election. `start()` campaigns in the background until
 * `stop()`: each time this candidate is elected a term begins, and it ends
 * when the lease is lost or cannot be proven alive, when the term is
 * relinquished, or at `stop()` (which also resigns: the lease is revoked, so
 * another candidate takes over at once). After a term ends, it campaigns
 * again (with a new lease). While etcd is unreachable it retries with
 * exponential backoff and jitter. Nothing it does raises an unhandled
 * rejection or an unhandled `error` event.
 */
export function createEtcdLeaderElection(options: EtcdLeaderElectionOptions): LeaderElection {
  const client = createEtcdClient(options.endpoints, options.security);
  const name = options.name.replace(/\/+$/, "");
  const deferTo = (options.deferTo ?? []).map((other) => other.replace(/\/+$/, ""));
  const ttlSeconds = leaseTtlSeconds(options.ttlMs ?? DEFAULT_ELECTION_TTL_MS);
  const identity = options.identity ?? `${hostname()}/${process.pid}`;
  const logger = options.logger ?? createSilentLogger();
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const backoff = createBackoff(electionBackoffOptions(ttlSeconds, options.random));
  const keeper = createTermKeeper();
  const stopping = new AbortController();
  let state: "idle" | "running" | "stopped" = "idle";
  let loop: Promise<void> | undefined;
  /** Ends the running session with a reason; undefined between sessions. */
  let endSession: ((reason: string) => void) | undefined;

  /** One campaign with one lease: resolves when it ends, rejects when etcd fails it. */
  const session = (): Promise<void> =>
    runCampaignSession({
      etcd: { client, requestTimeoutMs, logger },
      name,
      deferTo,
      ttlSeconds,
      identity,
      keeper,
      stopping: stopping.signal,
      setEnd: (end) => {
        endSession = end;
      },
      onElected: () => backoff.reset(),
    });

  const run = async (): Promise<void> => {
    while (state === "running") {
      let delay = 0;
      try {
        await session();
        delay = backoff.next();
      } catch (error) {
        delay = backoff.next();
        logger.warn(
          {
            err: error instanceof Error ? error.message : String(error),
            retryInMs: Math.round(delay),
          },
          "export leader election failed; retrying",
        );
      }
      if (state !== "running") return;
      await sleep(delay, stopping.signal);
    }
  };

  return {
    kind: "etcd",
    get term() {
      return keeper.current;
    },
    start() {
      if (state !== "idle") return;
      state = "running";
      loop = run().catch((error: unknown) => {
        logger.error({ err: error }, "export leader election loop failed");
      });
    },
    async stop() {
      if (state === "stopped") return;
      state = "stopped";
      stopping.abort("stopped");
      await loop;
      client.close();
    },
    onChange: keeper.onChange,
    relinquish(term, reason) {
      if (keeper.current !== term) return;
      endSession?.(reason);
    },
  };
}
