/**
 * The TLS material of a long-running process, re-read when its files
 * change (a thin shell over tls-material.ts and material-settle.ts):
 * `fs.watch` on the files' directories and a re-stat every `pollIntervalMs`
 * (a missed or impossible watch) both stat the files; a changed stat
 * signature is read once the files have been quiet for the settle time, as
 * one set, and an inconsistent set (a new certificate with the old key, a
 * file cut short: a helper rewriting the files in place, one after another)
 * is read again after another settle before its refusals count. A change
 * calls `onUpdate` with the new material, for new handshakes; a refused
 * read keeps the old material, calls `onRejected` once per refused content
 * and counts it by reason. Nothing here logs; the key is never in a message.
 */
import { coalescedRun } from "../coalesced-run.js";
import { createDirectoryWatch } from "../directory-watch.js";
import { materialPaths, type TlsMaterialPaths, watchedDirectories } from "./material-files.js";
import type { MaterialRejection } from "./material-piece.js";
import {
  firstMaterial,
  GLOBAL_TIMERS,
  type MaterialReadOptions,
  settleTurn,
} from "./material-read.js";
import { DEFAULT_SETTLE_POLICY } from "./material-settle.js";
import type { decideMaterial, TlsMaterial } from "./tls-material.js";

/** Options of {@link openTlsMaterialSource}. */
export interface TlsMaterialSourceOptions extends TlsMaterialPaths, MaterialReadOptions {
  /** The re-stat period in milliseconds; default 5000. */
  readonly pollIntervalMs?: number;
  /** Watch the files' directories (default true); false leaves it to the re-stat. */
  readonly watch?: boolean;
  /** Called with the new material after each change (not the first). */
  readonly onUpdate?: (material: TlsMaterial) => void;
  /** Called once for each refused content of a piece (the old piece stays). */
  readonly onRejected?: (rejection: MaterialRejection) => void;
}

/** See {@link openTlsMaterialSource}. */
export interface TlsMaterialSource {
  /** The material new handshakes should use. */
  readonly material: TlsMaterial;
  /** Refused re-reads so far, by reason (a counter's values). */
  readonly rejections: ReadonlyMap<MaterialRejection["reason"], number>;
  /** Stops watching and polling; no callback after it. */
  close(): void;
}

/**
 * Reads the material of `options` and keeps it current (see the module
 * comment). Rejects, watching nothing, when the first read is refused.
 */
export async function openTlsMaterialSource(
  options: TlsMaterialSourceOptions,
): Promise<TlsMaterialSource> {
  const timers = options.timers ?? GLOBAL_TIMERS;
  const turn = { ...options, policy: options.settle ?? DEFAULT_SETTLE_POLICY, timers };
  const paths = materialPaths(options);
  let { state, settle } = await firstMaterial(options);
  const rejections = new Map<MaterialRejection["reason"], number>();
  const directories = createDirectoryWatch(() => void check());
  let closed = false;
  let timer: unknown;

  const decided = (next: ReturnType<typeof decideMaterial>) => {
    state = next.state;
    for (const rejection of next.rejections) {
      rejections.set(rejection.reason, (rejections.get(rejection.reason) ?? 0) + 1);
      options.onRejected?.(rejection);
    }
    if (next.changed && state.material !== undefined) options.onUpdate?.(state.material);
  };

  /** Stats the files and does what the settle step says; one at a time, one more queued behind. */
  const check = coalescedRun(
    async () => {
      const { step, decision } = await settleTurn(turn, settle, state);
      if (closed) return;
      settle = step.state;
      if (decision !== undefined) decided(decision);
      if (step.action.kind === "wait") {
        if (timer !== undefined) timers.clearTimeout(timer);
        timer = timers.setTimeout(
          () => {
            timer = undefined;
            void check();
          },
          Math.max(step.action.until - timers.now(), 1),
        );
      }
      await watchDirectories();
    },
    () => closed,
  );

  /** Watches the directories of the files as they resolve now (a swapped symlink may move them). */
  const watchDirectories = async () => {
    const wanted = options.watch === false ? new Set<string>() : await watchedDirectories(paths);
    if (!closed) directories.set(wanted);
  };

  const poll = timers.setInterval(() => void check(), options.pollIntervalMs ?? 5_000);
  await watchDirectories();
  // A change between the first read and the watch: the first check sees it.
  void check();

  return {
    get material() {
      return state.material as TlsMaterial;
    },
    rejections,
    close() {
      closed = true;
      timers.clearInterval(poll);
      if (timer !== undefined) timers.clearTimeout(timer);
      directories.close();
    },
  };
}
