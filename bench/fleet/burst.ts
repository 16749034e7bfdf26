/**
 * The fleet benchmark's burst: the planned manifest writes (burst-plan.ts)
 * made as fast as the file system takes them (each written aside and
 * renamed into the hub's `--export-source dir:`, so the source never reads
 * half a file), not waiting for anything between them; then the final
 * version of each edited service, read off the store watch (the hub's first
 * put carrying its last edit number), and the wait until every interested
 * agent applied it or a newer version (an agent may skip a superseded one;
 * see createApplyLog).
 */
import { rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { awaitChange } from "../await-change.js";
import type { createApplyLog } from "../run-bench.js";
import { type LatencySummary, summarize } from "../stats.js";
import { preciseNow } from "../worker-protocol.js";
import type { BurstPlan } from "./burst-plan.js";
import type { WriteCounter } from "./write-counter.js";

/** What the burst measured. */
export interface BurstResult {
  /** When the first write was renamed into place. */
  readonly tFirst: number;
  /** From the first rename to the last (ms). */
  readonly editingMs: number;
  /** When the last interested agent applied the last edited service's final version. */
  readonly allAppliedAt: number;
  /** Per edited service: its last edit's rename → every interested agent applied its final version. */
  readonly serviceToAllApplied: LatencySummary;
}

/** How long the hub may take to export every final version, and the agents to apply them (ms). */
const TIMEOUT_MS = 120_000;

/** Makes the burst and waits until every interested agent applied every final version. */
export async function runBurst(
  manifests: string,
  plan: BurstPlan,
  counter: WriteCounter,
  log: ReturnType<typeof createApplyLog>,
): Promise<BurstResult> {
  const renamedAt: number[] = [];
  for (const [i, write] of plan.writes.entries()) {
    const aside = join(manifests, `.${write.file}.edit-${i}`);
    await writeFile(aside, write.text);
    await rename(aside, join(manifests, write.file));
    renamedAt.push(preciseNow());
  }
  const tFirst = renamedAt[0] ?? preciseNow();
  const editingMs = (renamedAt.at(-1) ?? tFirst) - tFirst;
  const missing = () =>
    plan.finals.filter((f) => counter.versionAt(f.service, f.edit) === undefined);
  await awaitChange(
    () => counter.failure() !== undefined || missing().length === 0,
    (check) => counter.onChange(check),
    TIMEOUT_MS,
    () =>
      new Error(
        `the hub exported ${plan.finals.length - missing().length} of ${plan.finals.length} final versions in ${TIMEOUT_MS} ms`,
      ),
  );
  const failure = counter.failure();
  if (failure !== undefined) throw new Error(`the store watch failed: ${failure.message}`);
  let allAppliedAt = tFirst;
  const latencies: number[] = [];
  for (const final of plan.finals) {
    const version = counter.versionAt(final.service, final.edit) as string;
    const applied = await log.waitAll(final.service, version, final.interested, TIMEOUT_MS);
    const last = Math.max(...applied);
    allAppliedAt = Math.max(allAppliedAt, last);
    latencies.push(last - (renamedAt[final.write] as number));
  }
  return { tFirst, editingMs, allAppliedAt, serviceToAllApplied: summarize(latencies) };
}
