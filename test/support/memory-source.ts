/**
 * An in-memory {@link ObjectSource} for unit tests, and helpers to read the
 * YAML fixtures of test/fixtures/export into objects and to copy them into a
 * temporary directory that a test may edit.
 */
import { cp, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseAllDocuments } from "yaml";
import type { KubeObject } from "../../services/common/kube-object.js";
import type { ObjectSource, SourceProblem } from "../../services/sources/object-source.js";

/** The directory of the export fixtures. */
export const EXPORT_FIXTURES = resolve(import.meta.dirname, "../fixtures/export");

/** An {@link ObjectSource} whose snapshot a test sets directly. */
export interface MemoryObjectSource extends ObjectSource {
  /** Replaces the snapshot and notifies the listeners in a microtask. */
  set(objects: readonly KubeObject[]): void;
  /** Marks the source synced (when created with `synced: false`). */
  markSynced(): void;
  /** Replaces the problems the source reports (for example an unparsable file). */
  setProblems(problems: readonly SourceProblem[]): void;
  /** How many times `start()` and `stop()` were called. */
  readonly calls: { start: number; stop: number };
}

/**
 * Creates an in-memory source holding `objects`. It is synced once started,
 * unless `synced` is false: then only {@link MemoryObjectSource.markSynced}
 * syncs it (to test a leader that waits for its source).
 */
export function createMemoryObjectSource(
  objects: readonly KubeObject[] = [],
  options: { synced?: boolean } = {},
): MemoryObjectSource {
  let snapshot = [...objects];
  let synced = false;
  let started = false;
  let manualSync = options.synced === false;
  let currentProblems: readonly SourceProblem[] = [];
  const listeners = new Set<() => void>();
  const waiters: { resolve: () => void; reject: (error: Error) => void }[] = [];
  const calls = { start: 0, stop: 0 };

  const becomeSynced = (): void => {
    if (synced) return;
    synced = true;
    for (const waiter of waiters.splice(0)) waiter.resolve();
  };

  return {
    name: "memory",
    calls,
    get synced() {
      return synced;
    },
    start() {
      calls.start++;
      if (started) return;
      started = true;
      if (!manualSync) queueMicrotask(becomeSynced);
    },
    async stop() {
      calls.stop++;
      for (const waiter of waiters.splice(0)) waiter.reject(new Error("source stopped"));
    },
    whenSynced() {
      if (synced) return Promise.resolve();
      return new Promise((resolve, reject) => waiters.push({ resolve, reject }));
    },
    snapshot: () => (synced ? snapshot : []),
    onChange(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    problems: (): readonly SourceProblem[] => currentProblems,
    setProblems(next) {
      currentProblems = [...next];
    },
    set(next) {
      snapshot = [...next];
      queueMicrotask(() => {
        for (const listener of [...listeners]) listener();
      });
    },
    markSynced() {
      manualSync = false;
      if (started) becomeSynced();
    },
  };
}

/** Lists the files under `dir`, recursively, in sorted order. */
async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((entry) =>
      entry.isDirectory() ? listFiles(join(dir, entry.name)) : [join(dir, entry.name)],
    ),
  );
  return nested.flat().sort();
}

/** Reads every YAML document of every `.yaml` file under `dir` (default: the export fixtures). */
export async function readManifestObjects(dir: string = EXPORT_FIXTURES): Promise<KubeObject[]> {
  const objects: KubeObject[] = [];
  for (const file of await listFiles(dir)) {
    if (!file.endsWith(".yaml")) continue;
    for (const document of parseAllDocuments(await readFile(file, "utf8"))) {
      const value = document.toJSON() as KubeObject | null;
      if (value !== null) objects.push(value);
    }
  }
  return objects;
}

/** A temporary copy of the export fixtures. */
export interface FixtureDir {
  /** The directory. */
  readonly path: string;
  /** Removes it. */
  remove(): Promise<void>;
}

/** Copies the export fixtures into a fresh temporary directory. */
export async function copyExportFixtures(): Promise<FixtureDir> {
  const path = await mkdtemp(join(tmpdir(), "aether-export-"));
  await cp(EXPORT_FIXTURES, path, { recursive: true });
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}
