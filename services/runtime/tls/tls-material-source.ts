/**
 * The TLS material of a long-running process, re-read when its files
 * change (a thin shell over tls-material.ts): `fs.watch` on the files'
 * directories (a change re-reads after `debounceMs` of quiet), and a
 * re-stat every `pollIntervalMs` that re-reads when a file's stat signature
 * changed (a missed or impossible watch). A change calls `onUpdate` with the
 * new material, for new handshakes; a re-read that is refused keeps the old
 * material, calls `onRejected` once per refused content and counts it by
 * reason. Nothing here logs; the key is never in a message.
 */
import { type FSWatcher, watch } from "node:fs";
import {
  materialPaths,
  readMaterialFiles,
  statSignature,
  type TlsMaterialPaths,
  watchedDirectories,
} from "./material-files.js";
import type { MaterialRejection } from "./material-piece.js";
import {
  decideMaterial,
  INITIAL_MATERIAL_STATE,
  type MaterialState,
  type TlsMaterial,
} from "./tls-material.js";

/** The timer functions the source uses (injectable; the globals by default). */
export interface MaterialTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  setInterval(callback: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

const GLOBAL_TIMERS: MaterialTimers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  setInterval: (callback, ms) => setInterval(callback, ms).unref(),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
};

/** Options of {@link openTlsMaterialSource}. */
export interface TlsMaterialSourceOptions extends TlsMaterialPaths {
  /** The re-stat period in milliseconds; default 5000. */
  readonly pollIntervalMs?: number;
  /** Watch the files' directories (default true); false leaves it to the re-stat. */
  readonly watch?: boolean;
  /** The quiet after a watch event before re-reading, in milliseconds; default 100. */
  readonly debounceMs?: number;
  /** Called with the new material after each change (not the first). */
  readonly onUpdate?: (material: TlsMaterial) => void;
  /** Called once for each refused content of a piece (the old piece stays). */
  readonly onRejected?: (rejection: MaterialRejection) => void;
  readonly timers?: MaterialTimers;
}

/** See {@link openTlsMaterialSource}. */
export interface TlsMaterialSource {
  /** The material new handshakes should use. */
  readonly material: TlsMaterial;
  /** Refused re-reads so far, by reason (a counter's values). */
  readonly rejections: ReadonlyMap<MaterialRejection["reason"], number>;
  /** Re-reads every file now; resolves once decided. */
  reload(): Promise<void>;
  /** Stops watching and polling; no callback after it. */
  close(): void;
}

/** The first material of `paths`, or an Error listing every refusal (the process should not start). */
async function firstMaterial(paths: TlsMaterialPaths): Promise<MaterialState> {
  const first = decideMaterial(INITIAL_MATERIAL_STATE, await readMaterialFiles(paths));
  if (first.rejections.length > 0 || first.state.material === undefined) {
    const reasons = first.rejections.map((rejection) => rejection.message);
    throw new Error(`TLS material refused: ${reasons.join("; ") || "no TLS context"}`);
  }
  return first.state;
}

/** Reads the TLS material of `paths` once (aetherctl); rejects with every refusal. */
export async function loadTlsMaterial(paths: TlsMaterialPaths): Promise<TlsMaterial> {
  return (await firstMaterial(paths)).material as TlsMaterial;
}

/**
 * Reads the material of `options` and keeps it current (see the module
 * comment). Rejects, watching nothing, when the first read is refused.
 */
export async function openTlsMaterialSource(
  options: TlsMaterialSourceOptions,
): Promise<TlsMaterialSource> {
  const timers = options.timers ?? GLOBAL_TIMERS;
  const paths = materialPaths(options);
  let signature = await statSignature(paths);
  let state = await firstMaterial(options);
  const rejections = new Map<MaterialRejection["reason"], number>();
  const watchers = new Map<string, FSWatcher>();
  let closed = false;
  let running: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  let debounce: unknown;

  const decide = async () => {
    signature = await statSignature(paths);
    const next = decideMaterial(state, await readMaterialFiles(options));
    if (closed) return;
    state = next.state;
    for (const rejection of next.rejections) {
      rejections.set(rejection.reason, (rejections.get(rejection.reason) ?? 0) + 1);
      options.onRejected?.(rejection);
    }
    if (next.changed && state.material !== undefined) options.onUpdate?.(state.material);
    await watchDirectories();
  };

  /** Re-reads now, or once more right after the re-read in progress (resolving after that one). */
  const reload = (): Promise<void> => {
    if (closed) return Promise.resolve();
    if (queued !== undefined) return queued;
    if (running !== undefined) {
      queued = running.then(() => {
        queued = undefined;
        return reload();
      });
      return queued;
    }
    running = decide().finally(() => {
      running = undefined;
    });
    return running;
  };

  const schedule = () => {
    if (closed) return;
    if (debounce !== undefined) timers.clearTimeout(debounce);
    debounce = timers.setTimeout(() => {
      debounce = undefined;
      void reload();
    }, options.debounceMs ?? 100);
  };

  /** Watches the directories of the files as they resolve now (a swapped symlink may move them). */
  const watchDirectories = async () => {
    const wanted = options.watch === false ? new Set<string>() : await watchedDirectories(paths);
    for (const [directory, watcher] of watchers) {
      if (!wanted.has(directory)) {
        watcher.close();
        watchers.delete(directory);
      }
    }
    for (const directory of wanted) {
      if (closed || watchers.has(directory)) continue;
      try {
        const watcher = watch(directory, { persistent: false }, schedule);
        watcher.on("error", () => {
          watcher.close();
          if (watchers.get(directory) === watcher) watchers.delete(directory);
        });
        watchers.set(directory, watcher);
      } catch {
        // Unwatchable (gone, or no inotify watches left): the re-stat covers it.
      }
    }
  };

  const poll = timers.setInterval(() => {
    void statSignature(paths).then((now) => {
      if (now !== signature) void reload();
    });
  }, options.pollIntervalMs ?? 5_000);
  await watchDirectories();

  return {
    get material() {
      return state.material as TlsMaterial;
    },
    rejections,
    reload,
    close() {
      closed = true;
      timers.clearInterval(poll);
      if (debounce !== undefined) timers.clearTimeout(debounce);
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}
