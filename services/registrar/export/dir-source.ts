/**
 * The `dir:PATH` object source: every `*.yaml`, `*.yml` and `*.json` file
 * under a directory (recursively), multi-document, followed with one
 * `fs.watch` per directory (see `dir-watch.ts`; polling where watching is
 * impossible or turned off, and a periodic full rescan as a safety net) and
 * re-read after a debounced burst of changes.
 *
 * - Hidden files and directories (names starting with `.`, which covers the
 *   `..data` and `..TIMESTAMP` entries of a mounted ConfigMap) and editor
 *   leftovers (`*~`, `*.swp`, `#name#`) are skipped. Symbolic links are
 *   followed, so a ConfigMap volume's `name.yaml -> ..data/name.yaml` files
 *   are read, and any event (including a `..data` swap) triggers a rescan.
 * - A rescan stats every file and re-reads only those whose identity, size
 *   or times changed; listeners are told only when the snapshot's content
 *   changed, so touching a file changes nothing.
 * - A file with a YAML error, or with a document that is not a Kubernetes
 *   object (no apiVersion, kind or metadata.name), is a problem
 *   (`relative/path.yaml:LINE`), logged once; its last good objects are kept
 *   (none if it never parsed) until it is fixed. The whole file is held back,
 *   not only the bad document, so that a half-edited file never makes its
 *   objects disappear.
 * - The same object (API group, kind, namespace, name) in two places: the
 *   first by path keeps it, the other is a problem.
 * - Objects are returned as written: no namespace defaulting and no
 *   `creationTimestamp` (unless a manifest sets one), so route precedence
 *   ties fall through to the namespace/name order; see `normalizeObject`.
 */
import { readdir, readFile, realpath, stat } from "node:fs/promises";
import { join } from "node:path";
import { apiGroupOf, type KubeObject } from "../../common/kube-object.js";
import { createSilentLogger, type Logger } from "../logger.js";
import { type ParsedObject, parseManifest } from "./dir-parse.js";
import { createDirectoryWatchers } from "./dir-watch.js";
import {
  assembleObjectSource,
  createSnapshotPublisher,
  createSyncGate,
  newProblems,
} from "./kube-snapshot.js";
import type { ObjectSource, SourceProblem } from "./object-source.js";

/** Options of {@link createDirSource}. */
export interface DirSourceOptions {
  /** The directory to read. */
  readonly path: string;
  /** How long changes must be quiet before a rescan, in milliseconds (default 100). */
  readonly debounceMs?: number;
  /** Where problems and fallbacks are logged (default: silent). */
  readonly logger?: Logger;
  /**
   * Follow changes with `fs.watch` on every directory (default true); false
   * polls instead, for file systems that do not report changes (some network
   * and FUSE mounts).
   */
  readonly watch?: boolean;
  /** The rescan period when polling: `watch` false, or a directory that cannot be watched (default 1000 ms). */
  readonly pollIntervalMs?: number;
  /**
   * A full rescan this often even while watching, as a safety net for events
   * the watcher missed (default 60000 ms; 0 turns it off).
   */
  readonly resyncIntervalMs?: number;
}

/** Files larger than this are not read (a problem instead). */
const MAX_FILE_BYTES = 16 * 1024 * 1024;
const MANIFEST_EXTENSIONS = [".yaml", ".yml", ".json"];

/** What the source keeps about one manifest file. */
interface FileState {
  /** Identity, size and times of the file when last read. */
  readonly signature: string;
  /** The last good objects of the file. */
  readonly objects: readonly ParsedObject[];
  /** The problems of the last read (empty when it was good). */
  readonly problems: readonly SourceProblem[];
}

/** A manifest file found by a scan. */
interface FoundFile {
  readonly absolute: string;
  readonly signature: string;
  readonly size: number;
}

/** True for names the source never reads: hidden entries and editor leftovers. */
export function isIgnoredName(name: string): boolean {
  if (name.startsWith(".") || name.endsWith("~")) return true;
  if (name.startsWith("#") && name.endsWith("#")) return true;
  return /\.sw[a-p]$/.test(name);
}

/** True for the file names the source reads (by extension, case-insensitively). */
function isManifestName(name: string): boolean {
  const lower = name.toLowerCase();
  return !isIgnoredName(name) && MANIFEST_EXTENSIONS.some((ext) => lower.endsWith(ext));
}

/** The error code of a Node.js system error, if any. */
function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/** Compares strings by UTF-16 code units, the same on every machine and locale. */
function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** What a scan found. */
interface ScanResult {
  /** The manifest files, by `/`-separated path relative to the root. */
  readonly files: Map<string, FoundFile>;
  /** The directories read (root included), absolute path → `dev:inode`, to watch. */
  readonly directories: Map<string, string>;
  /** Subdirectories that could not be read. */
  readonly problems: SourceProblem[];
}

/** `dev:inode` of a file or directory. */
function identityOf(stats: { readonly dev: number; readonly ino: number }): string {
  return `${stats.dev}:${stats.ino}`;
}

/**
 * Lists the manifest files and the directories under `root` (following
 * symbolic links, each directory once). An unreadable subdirectory is a
 * problem; an unreadable root throws.
 */
async function scanDirectory(root: string): Promise<ScanResult> {
  const files = new Map<string, FoundFile>();
  const directories = new Map<string, string>();
  const problems: SourceProblem[] = [];
  const visited = new Set<string>();

  const visit = async (directory: string, relative: string, identity: string): Promise<void> => {
    let entries: string[];
    try {
      const real = await realpath(directory);
      if (visited.has(real)) return;
      visited.add(real);
      entries = await readdir(directory);
      directories.set(directory, identity);
    } catch (error) {
      if (relative === "") throw error;
      if (errorCode(error) === "ENOENT") return;
      problems.push({
        where: `${relative}/`,
        message: `cannot read directory: ${(error as Error).message}`,
      });
      return;
    }
    for (const name of entries) {
      if (isIgnoredName(name)) continue;
      const absolute = join(directory, name);
      const path = relative === "" ? name : `${relative}/${name}`;
      let stats: Awaited<ReturnType<typeof stat>>;
      try {
        stats = await stat(absolute);
      } catch {
        continue; // removed meanwhile, or a dangling link (a ConfigMap swap in progress)
      }
      if (stats.isDirectory()) await visit(absolute, path, identityOf(stats));
      else if (stats.isFile() && isManifestName(name)) {
        const signature = `${identityOf(stats)}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`;
        files.set(path, { absolute, signature, size: stats.size });
      }
    }
  };

  await visit(root, "", identityOf(await stat(root)));
  return { files, directories, problems };
}

/** The identity of an object across files: API group, kind, namespace, name. */
function identity(object: KubeObject): string {
  const metadata = object.metadata ?? {};
  return [apiGroupOf(object.apiVersion), object.kind, metadata.namespace ?? "", metadata.name].join(
    "\u0000",
  );
}

/** Describes an object for a message: `Kind namespace/name` or `Kind name`. */
function describeObject(object: KubeObject): string {
  const { namespace, name } = object.metadata ?? {};
  return `${object.kind} ${namespace === undefined ? "" : `${namespace}/`}${name}`;
}

/**
 * Creates a source reading the manifests under `options.path` (see the
 * module comment for what is read and how changes and errors are handled).
 * `start()` begins the first scan and the watch; `whenSynced()` resolves
 * after the first scan, or rejects (and `problems()` says why) when the
 * directory does not exist or is not a directory. A stopped source cannot
 * be started again.
 */
export function createDirSource(options: DirSourceOptions): ObjectSource {
  const root = options.path;
  const name = `dir:${root}`;
  const debounceMs = options.debounceMs ?? 100;
  const pollIntervalMs = options.pollIntervalMs ?? 1_000;
  const resyncIntervalMs = options.resyncIntervalMs ?? 60_000;
  const logger = (options.logger ?? createSilentLogger()).child({ source: name });
  const publisher = createSnapshotPublisher(logger, name);
  const gate = createSyncGate();

  const files = new Map<string, FileState>();
  let scanProblems: SourceProblem[] = [];
  let currentProblems: readonly SourceProblem[] = [];
  let stopped = false;
  let pollTimer: NodeJS.Timeout | undefined;
  let resyncTimer: NodeJS.Timeout | undefined;
  let debounceTimer: NodeJS.Timeout | undefined;
  let firstPendingAt: number | undefined;
  let scanning: Promise<void> | undefined;
  let scanAgain = false;

  /** Reads one changed file into `files` (or drops it when it vanished). */
  const readChanged = async (path: string, found: FoundFile): Promise<void> => {
    const previous = files.get(path);
    const keep = (problems: SourceProblem[]) =>
      files.set(path, { signature: found.signature, objects: previous?.objects ?? [], problems });
    if (found.size > MAX_FILE_BYTES) {
      keep([{ where: path, message: `is larger than ${MAX_FILE_BYTES} bytes; not read` }]);
      return;
    }
    let text: string;
    try {
      text = await readFile(found.absolute, "utf8");
    } catch (error) {
      if (errorCode(error) === "ENOENT") files.delete(path);
      else keep([{ where: path, message: `cannot read file: ${(error as Error).message}` }]);
      return;
    }
    const parsed = parseManifest(text, path);
    if (parsed.problems.length > 0) keep([...parsed.problems]);
    else files.set(path, { signature: found.signature, objects: parsed.objects, problems: [] });
  };

  /** Builds the snapshot and problem list from `files` (first definition of an object wins). */
  const assemble = (): { objects: KubeObject[]; problems: SourceProblem[] } => {
    const objects: KubeObject[] = [];
    const problems: SourceProblem[] = [...scanProblems];
    const definedAt = new Map<string, string>();
    for (const path of [...files.keys()].sort(byCodeUnits)) {
      const state = files.get(path) as FileState;
      problems.push(...state.problems);
      for (const { object, line } of state.objects) {
        const key = identity(object);
        const where = `${path}:${line}`;
        const first = definedAt.get(key);
        if (first !== undefined) {
          const message = `${describeObject(object)} is also defined at ${first}; this copy is ignored`;
          problems.push({ where, message });
          continue;
        }
        definedAt.set(key, where);
        objects.push(object);
      }
    }
    return { objects, problems };
  };

  /** Rescans the directory, re-reads changed files and publishes the result. */
  const rescan = async (): Promise<void> => {
    let found: ScanResult;
    try {
      found = await scanDirectory(root);
    } catch (error) {
      // The directory went away (or became unreadable): keep what was read.
      scanProblems = [
        { where: root, message: `cannot read directory: ${(error as Error).message}` },
      ];
      updateProblems(assemble().problems);
      return;
    }
    scanProblems = found.problems;
    const reread: string[] = [];
    for (const [path, file] of found.files) {
      if (files.get(path)?.signature === file.signature) continue;
      reread.push(path);
      await readChanged(path, file);
    }
    for (const path of [...files.keys()]) if (!found.files.has(path)) files.delete(path);
    if (stopped) return;
    // A directory watched only now may have changed since it was read: scan again.
    if (options.watch !== false && watchers.update(found.directories)) schedule();
    const { objects, problems } = assemble();
    updateProblems(problems);
    const changed = publisher.publish(objects, gate.synced);
    logger.debug({ reread, changed, objects: objects.length }, "rescanned");
  };

  /** Replaces the problem list, logging problems that appeared and noting when all cleared. */
  const updateProblems = (problems: SourceProblem[]) => {
    for (const problem of newProblems(currentProblems, problems)) {
      logger.warn({ where: problem.where }, `manifest problem: ${problem.message}`);
    }
    if (currentProblems.length > 0 && problems.length === 0)
      logger.info("manifest problems cleared");
    currentProblems = Object.freeze(problems);
  };

  /** Runs a rescan now, or once more after the one in progress. */
  const runScan = () => {
    debounceTimer = undefined;
    firstPendingAt = undefined;
    if (stopped) return;
    if (scanning !== undefined) {
      scanAgain = true;
      return;
    }
    scanning = rescan()
      .catch((error: unknown) => logger.error({ err: error }, "rescan failed"))
      .finally(() => {
        scanning = undefined;
        if (scanAgain && !stopped) {
          scanAgain = false;
          schedule();
        }
      });
  };

  /** Debounces a rescan: quiet for `debounceMs`, but never later than ten times that. */
  const schedule = () => {
    if (stopped) return;
    if (!gate.synced) {
      scanAgain = true; // the first scan is running; scan again right after it
      return;
    }
    const now = Date.now();
    firstPendingAt ??= now;
    if (debounceTimer !== undefined) clearTimeout(debounceTimer);
    const wait = Math.max(0, Math.min(debounceMs, firstPendingAt + debounceMs * 10 - now));
    debounceTimer = setTimeout(runScan, wait);
  };

  const startPolling = () => {
    if (pollTimer === undefined && !stopped) pollTimer = setInterval(schedule, pollIntervalMs);
  };

  const watchers = createDirectoryWatchers(
    () => schedule(),
    (directory, error) => {
      if (pollTimer === undefined) {
        logger.warn(
          { err: error, directory },
          `cannot watch a directory; polling every ${pollIntervalMs} ms as well`,
        );
      }
      startPolling();
    },
  );

  /** Checks the directory, runs the first scan (which starts the watches) and the timers. */
  const initialise = async () => {
    let isDirectory = false;
    try {
      isDirectory = (await stat(root)).isDirectory();
    } catch (error) {
      if (errorCode(error) !== "ENOENT") throw error;
      throw new Error(`the directory ${root} does not exist`);
    }
    if (!isDirectory) throw new Error(`${root} is not a directory`);
    if (stopped) return;
    if (options.watch === false) startPolling();
    if (resyncIntervalMs > 0) resyncTimer = setInterval(schedule, resyncIntervalMs);
    scanning = rescan();
    await scanning;
    scanning = undefined;
    if (stopped) return;
    gate.open();
    logger.info(
      { objects: publisher.snapshot().length, problems: currentProblems.length },
      "manifests read",
    );
    if (scanAgain) {
      scanAgain = false;
      schedule();
    }
  };

  return assembleObjectSource({
    name,
    logger,
    publisher,
    gate,
    run: initialise,
    failed(message) {
      scanProblems = [{ where: root, message }];
      currentProblems = Object.freeze([...scanProblems]);
    },
    async release() {
      stopped = true;
      watchers.close();
      for (const timer of [pollTimer, resyncTimer]) if (timer !== undefined) clearInterval(timer);
      if (debounceTimer !== undefined) clearTimeout(debounceTimer);
      pollTimer = resyncTimer = debounceTimer = undefined;
      await scanning?.catch(() => {});
    },
    problems: () => currentProblems,
  });
}
