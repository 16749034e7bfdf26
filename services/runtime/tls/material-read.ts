/**
 * A settled read of a process's TLS files (the shell of material-settle.ts
 * over material-files.ts and tls-material.ts): one turn of the settle
 * machine (a stat, and the read it calls for), and the first material,
 * read at once and again after a settle while inconsistent, so that a
 * process (or aetherctl) started in the middle of a rotation does not fail
 * on a new certificate with the old key.
 */
import {
  materialPaths,
  readMaterialFiles,
  statSignature,
  type TlsMaterialPaths,
} from "./material-files.js";
import {
  DEFAULT_SETTLE_POLICY,
  observeRead,
  observeStat,
  type SettlePolicy,
  type SettleState,
  type SettleStep,
} from "./material-settle.js";
import {
  decideMaterial,
  INITIAL_MATERIAL_STATE,
  type MaterialState,
  type TlsMaterial,
} from "./tls-material.js";

/** The clock and timer functions a settled read uses (injectable; the globals by default). */
export interface MaterialTimers {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  setInterval(callback: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

/** `Date.now` and Node's timers; the interval unref'd (a re-stat holds no process open). */
export const GLOBAL_TIMERS: MaterialTimers = {
  now: Date.now,
  // Not unref'd: a settle timer is short, and a one-shot command's first read waits on it.
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  setInterval: (callback, ms) => setInterval(callback, ms).unref(),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
};

/** The settle policy and timers of a read (see material-settle.ts). */
export interface MaterialReadOptions {
  /** Quiet time and retries of an inconsistent read; default {@link DEFAULT_SETTLE_POLICY}. */
  readonly settle?: SettlePolicy;
  readonly timers?: MaterialTimers;
}

/**
 * One turn from `settle`: stats the files, and when the step says so reads
 * them and decides the read against `material`. The decision is returned
 * only when the settle step says to take it (consistent, or out of
 * retries); a discarded read changes nothing.
 */
export async function settleTurn(
  options: TlsMaterialPaths & { readonly policy: SettlePolicy; readonly timers: MaterialTimers },
  settle: SettleState,
  material: MaterialState,
): Promise<{ step: SettleStep; decision?: ReturnType<typeof decideMaterial> }> {
  const { policy, timers } = options;
  const paths = materialPaths(options);
  const step = observeStat(settle, policy, timers.now(), await statSignature(paths));
  if (step.action.kind !== "read") return { step };
  const decision = decideMaterial(material, await readMaterialFiles(options));
  const outcome = {
    signature: await statSignature(paths),
    consistent: decision.rejections.length === 0,
  };
  const read = observeRead(step.state, policy, timers.now(), outcome);
  return read.action.kind === "decide" ? { step: read, decision } : { step: read };
}

/**
 * The first material of `options`, read at once and again after a settle
 * while inconsistent (a rotation under way), or an Error listing every
 * refusal of the last read (the process should not start).
 */
export async function firstMaterial(
  options: TlsMaterialPaths & MaterialReadOptions,
): Promise<{ state: MaterialState; settle: SettleState }> {
  const timers = options.timers ?? GLOBAL_TIMERS;
  const turn = { ...options, policy: options.settle ?? DEFAULT_SETTLE_POLICY, timers };
  // Pending since ever: the first stat reads at once.
  const signature = await statSignature(materialPaths(options));
  let settle: SettleState = { signature, pending: true, quietSince: -Infinity, retries: 0 };
  for (;;) {
    const { step, decision } = await settleTurn(turn, settle, INITIAL_MATERIAL_STATE);
    settle = step.state;
    if (decision !== undefined) {
      if (decision.rejections.length === 0 && decision.state.material !== undefined) {
        return { state: decision.state, settle };
      }
      const reasons = decision.rejections.map((rejection) => rejection.message);
      throw new Error(`TLS material refused: ${reasons.join("; ") || "no TLS context"}`);
    }
    const wait = step.action.kind === "wait" ? step.action.until - timers.now() : 0;
    await new Promise<void>((resolve) => timers.setTimeout(resolve, Math.max(wait, 1)));
  }
}

/** Reads the TLS material of `options` once (aetherctl), settling as above; rejects with every refusal. */
export async function loadTlsMaterial(
  options: TlsMaterialPaths & MaterialReadOptions,
): Promise<TlsMaterial> {
  return (await firstMaterial(options)).state.material as TlsMaterial;
}
