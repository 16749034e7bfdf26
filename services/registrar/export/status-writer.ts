/**
 * The status writer: the export leader's shell that writes the status the
 * pure `status-plan.ts` plans back to the source objects (routes'
 * `status.parents`, attached policies' `status.ancestors`), and only status,
 * through the status subresource.
 *
 * - Coalesced with the export run: each successful reconcile hands over its
 *   inputs; while a run of writes is under way only the latest inputs are
 *   kept, and one more run follows. An object whose status is already right
 *   is not written, and one this writer patched from a resourceVersion the
 *   snapshot still shows (its watch event not in yet) is not patched again.
 * - At most {@link STATUS_WRITE_CONCURRENCY} PATCHes in flight.
 * - A failed write (API server down, 409 on a status another writer changed,
 *   403 without RBAC) is counted and logged through a rate-limited log, and
 *   the last inputs are planned again after a backoff; it never fails the
 *   export. A failure that is not about one object (anything but a 404 or a
 *   409: refused, forbidden, unreachable) ends the run's writes, so an API
 *   server that refuses them all gets a few PATCHes per retry, not one per
 *   object.
 * - Incremental: an object the last plans found in sync is skipped while
 *   its resourceVersion and inputs are unchanged (`status-memo.ts`); a
 *   failed write forgets its object, and `pause()` everything (a new
 *   leadership term begins after one, and plans every object again).
 * - With `fleet`, accepted route parents also carry the fleet's summary of
 *   their Service (`common/fleet-condition.ts`), read when a run plans; a
 *   change of the fleet's view plans the last inputs again, at most once per
 *   `fleetDelayMs` (the feed changes with every cluster's heartbeat).
 * - `pause()` (the leadership is gone) and `stop()` drop what is pending.
 */
import { Counter, type Registry } from "prom-client";
import type { FleetSummary } from "../../common/fleet-condition.js";
import { canonicalJson } from "../../common/projector-index.js";
import { createStatusMemo } from "../../common/status-memo.js";
import {
  planStatusPatches,
  type StatusInputs,
  type StatusPatch,
} from "../../common/status-plan.js";
import { createBackoff } from "../../runtime/backoff.js";
import type { Logger } from "../../runtime/logger.js";
import { createRateLimitedLog } from "../../runtime/rate-limited-log.js";
import { runLimited } from "./run-limited.js";

/** How many status PATCHes are in flight at most. */
export const STATUS_WRITE_CONCURRENCY = 4;

/** What the export controller hands the status of its runs to. */
export interface StatusSink {
  /** The inputs of a successful reconcile: plan and write their status (coalesced). */
  update(inputs: StatusInputs): void;
  /** Not the leader any more: drops pending inputs and retries. */
  pause(): void;
  /** Drops what is pending and resolves once no write is in flight. */
  stop(): Promise<void>;
}

/** The fleet's view of the exported Services, as the status writer reads it. */
export interface FleetSummaries {
  /** The fleet's summary of each of `services` some cluster reports, by `namespace/name`. */
  summaries(services: ReadonlySet<string>): ReadonlyMap<string, FleetSummary>;
  /** Calls `listener` after the fleet's view may have changed; returns the unsubscribe function. */
  onChange(listener: () => void): () => void;
}

/** Options of {@link createStatusWriter}. */
export interface StatusWriterOptions {
  /** Sends one merge patch to a status path (see `kube-status-patch.ts`); rejects on failure. */
  readonly patch: (path: string, body: unknown) => Promise<void>;
  /** Where failures (rate-limited) and written counts (debug) are logged. */
  readonly logger: Logger;
  /** Where `aether_config_export_status_writes_total{result}` is registered; default nowhere. */
  readonly registry?: Registry;
  /** The current time; default the system clock. */
  readonly now?: () => Date;
  /** The first retry delay after a failed write, in milliseconds (default 1000; up to 60000). */
  readonly retryInitialMs?: number;
  /** The fleet's view, for the fleet condition on route parents; default none (no condition). */
  readonly fleet?: FleetSummaries;
  /**
   * The least time between plans a change of the fleet's view starts, in
   * milliseconds; default 5000 (a view of every exported Service is computed
   * for each: about 40 ms per 1,000 Services).
   */
  readonly fleetDelayMs?: number;
}

/** The outcomes counted: a write that landed, one refused as stale (409), any other failure. */
type Result = "written" | "conflict" | "failed";

/** The time as conditions carry it: RFC 3339 in whole seconds, UTC. */
function conditionTime(date: Date): string {
  return date.toISOString().replace(/\.\d+Z$/, "Z");
}

/** Creates a status writer (see the module comment); it writes nothing until `update`. */
export function createStatusWriter(options: StatusWriterOptions): StatusSink {
  const { logger } = options;
  const now = options.now ?? (() => new Date());
  const problems = createRateLimitedLog(logger);
  const backoff = createBackoff({ initialMs: options.retryInitialMs ?? 1_000, maxMs: 60_000 });
  const writes = new Counter({
    name: "aether_config_export_status_writes_total",
    help: "Status writes to the source objects (routes' parents, policies' ancestors) by result: written, conflict (409, the status changed meanwhile; planned again), failed.",
    labelNames: ["result"],
    registers: options.registry === undefined ? [] : [options.registry],
  });
  for (const result of ["written", "conflict", "failed"]) writes.inc({ result }, 0);
  /** Per object (path), the resourceVersion and body of the last patch that landed. */
  let sent = new Map<string, string>();
  /** The objects last planned in sync: skipped while their resourceVersion and inputs hold. */
  const memo = createStatusMemo();
  let pending: StatusInputs | undefined;
  let last: StatusInputs | undefined;
  let running: Promise<void> | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let active = true;

  /** What a run's writes met: each failure, and whether the API server refuses them all. */
  interface RunFailures {
    readonly results: Result[];
    /** A failure not about one object (refused, forbidden, unreachable): the run writes no more. */
    broken: boolean;
  }

  const writeOne = async (patch: StatusPatch, marker: string, failures: RunFailures) => {
    try {
      await options.patch(patch.path, patch.body);
      sent.set(patch.path, marker);
      writes.inc({ result: "written" });
    } catch (error) {
      sent.delete(patch.path);
      memo.forget(patch.path);
      const code = (error as { statusCode?: number }).statusCode;
      const result: Result = code === 409 ? "conflict" : "failed";
      failures.results.push(result);
      if (code !== 409 && code !== 404) failures.broken = true;
      writes.inc({ result });
      const { kind, namespace, name } = patch;
      const fields = { kind, namespace, name, err: (error as Error).message };
      problems.warn(`status-${result}`, fields, "status write failed; planned again later");
    }
  };

  const runOnce = async (inputs: StatusInputs) => {
    const fleet = options.fleet?.summaries(inputs.services);
    const planned = fleet === undefined ? inputs : { ...inputs, fleet };
    const patches = planStatusPatches(planned, conditionTime(now()), memo);
    const previous = sent;
    sent = new Map();
    const due: { patch: StatusPatch; marker: string }[] = [];
    for (const patch of patches) {
      const marker = `${patch.resourceVersion}\n${canonicalJson(patch.body.status)}`;
      if (previous.get(patch.path) === marker) sent.set(patch.path, marker);
      else due.push({ patch, marker });
    }
    const failures: RunFailures = { results: [], broken: false };
    function* tasks() {
      for (const { patch, marker } of due) {
        if (failures.broken) return;
        yield () => writeOne(patch, marker, failures);
      }
    }
    await runLimited(tasks(), STATUS_WRITE_CONCURRENCY);
    // One line per run (debug): what the run planned, found due and failed to write.
    logger.debug(
      { planned: patches.length, due: due.length, failed: failures.results.length },
      "status run",
    );
    if (failures.results.length === 0) backoff.reset();
    else if (active && pending === undefined) {
      retryTimer = setTimeout(() => {
        retryTimer = undefined;
        if (last !== undefined) update(last);
      }, backoff.next());
    }
  };

  const drain = async () => {
    // Planned once the reconcile that handed the inputs over has finished (a
    // first plan reads every route and policy: about 0.1 s at 10,000 routes;
    // later ones only what may have changed).
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (active && pending !== undefined) {
      const inputs = pending;
      pending = undefined;
      await runOnce(inputs);
    }
    running = undefined;
  };

  const update = (inputs: StatusInputs) => {
    if (!active) return;
    last = inputs;
    pending = inputs;
    if (retryTimer !== undefined) clearTimeout(retryTimer);
    retryTimer = undefined;
    running ??= drain();
  };

  let fleetTimer: NodeJS.Timeout | undefined;
  const unsubscribe = options.fleet?.onChange(() => {
    if (fleetTimer !== undefined || !active || last === undefined) return;
    fleetTimer = setTimeout(() => {
      fleetTimer = undefined;
      if (last !== undefined) update(last);
    }, options.fleetDelayMs ?? 5_000);
    fleetTimer.unref?.();
  });

  const drop = () => {
    pending = undefined;
    memo.clear();
    last = undefined;
    if (retryTimer !== undefined) clearTimeout(retryTimer);
    retryTimer = undefined;
    if (fleetTimer !== undefined) clearTimeout(fleetTimer);
    fleetTimer = undefined;
  };

  return {
    update,
    pause: drop,
    async stop() {
      active = false;
      unsubscribe?.();
      drop();
      await running;
      problems.flush();
    },
  };
}
