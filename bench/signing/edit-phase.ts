/**
 * The edit phase of a signing-benchmark leg: route edits made as an
 * operator makes them, by rewriting a namespace's manifest file under the
 * hub registrar's `--export-source dir:` (written aside and renamed over,
 * so the source never reads half a file), one at a time, each until every
 * agent that depends on the service applied a new version of it. The
 * latency runs from the rename to the last interested agent's `onUpdate`,
 * so it includes the source's debounce and the export, in both legs alike.
 */
import { rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { awaitChange } from "../await-change.js";
import {
  namespaceManifest,
  type ScenarioChange,
  SERVICES_PER_NAMESPACE,
  serviceIndex,
} from "../scenario.js";
import type { WorkerPool } from "../worker-pool.js";
import { preciseNow } from "../worker-protocol.js";

/** When each agent last applied a new version of each service (from the workers' reports). */
export interface AppliedLog {
  /**
   * Resolves with each of `agents`' apply times once all of them applied a
   * version of `service` after `since`; rejects after `timeoutMs`.
   */
  waitAfter(
    service: string,
    agents: readonly number[],
    since: number,
    timeoutMs: number,
  ): Promise<number[]>;
  /** Stops listening to the workers. */
  close(): void;
}

/** Follows the "applied" reports of `pool`'s workers. */
export function createAppliedLog(pool: WorkerPool): AppliedLog {
  /** service → agent → when it last applied a version of it. */
  const last = new Map<string, Map<number, number>>();
  let changed: (() => void) | undefined;
  const off = pool.onReport((report) => {
    if (report.type !== "applied") return;
    for (const item of report.items) {
      let byAgent = last.get(item.service);
      if (byAgent === undefined) {
        byAgent = new Map();
        last.set(item.service, byAgent);
      }
      byAgent.set(item.id, Math.max(byAgent.get(item.id) ?? 0, item.t));
    }
    changed?.();
  });
  const times = (service: string, agents: readonly number[]) =>
    agents.map((id) => last.get(service)?.get(id) ?? 0);
  return {
    async waitAfter(service, agents, since, timeoutMs) {
      await awaitChange(
        () => times(service, agents).every((t) => t > since),
        (check) => {
          changed = check;
        },
        timeoutMs,
        () => {
          const got = times(service, agents).filter((t) => t > since).length;
          return new Error(
            `${service}: ${got}/${agents.length} interested agents applied the edit in ${timeoutMs} ms`,
          );
        },
      );
      return times(service, agents);
    },
    close: off,
  };
}

/** Makes the edits of `changes` to the mesh of `services` in `manifests`; each edit's latency (ms). */
export async function runEdits(
  manifests: string,
  services: number,
  changes: readonly ScenarioChange[],
  log: AppliedLog,
): Promise<number[]> {
  const edits = new Map<number, number>();
  const latencies: number[] = [];
  for (const [i, change] of changes.entries()) {
    const index = serviceIndex(change.service);
    edits.set(index, i + 1);
    const [file, text] = namespaceManifest(
      services,
      Math.floor(index / SERVICES_PER_NAMESPACE),
      edits,
    );
    const aside = join(manifests, `.${file}.edit`);
    await writeFile(aside, text);
    const tEdit = preciseNow();
    await rename(aside, join(manifests, file));
    const applied = await log.waitAfter(change.service, change.interested, tEdit, 30_000);
    latencies.push(Math.max(...applied) - tEdit);
  }
  return latencies;
}
