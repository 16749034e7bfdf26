/**
 * The `dir:PATH` object source: every `*.yaml`, `*.yml` and `*.json` file
 * under a directory (recursively), multi-document, followed with one
 * `fs.watch` per directory (see `dir-watch.ts`; polling where watching is
 * impossible or turned off, and a periodic full rescan as a safety net) and
 * re-read after a debounced burst of changes. A change reported in a
 * directory rescans that directory only; a directory is watched before it is
 * listed, so no change after a listing goes unnoticed.
 *
 * - Hidden files and directories (names starting with `.`, which covers the
 *   `..data` and `..TIMESTAMP` entries of a mounted ConfigMap) and editor
 *   leftovers (`*~`, `*.swp`, `#name#`) are skipped. Symbolic links are
 *   followed, so a ConfigMap volume's `name.yaml -> ..data/name.yaml` files
 *   are read, and any event (including a `..data` swap) triggers a rescan.
 * - A rescan stats every file and re-reads only those whose identity, size
 *   or times changed (several at a time); the snapshot is assembled again
 *   only when a file was re-read or removed, and listeners are told only
 *   when its content changed, so touching a file changes nothing. The
 *   objects of a file that was not re-read are the same objects as before.
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
import { readFile as readFileCallback } from "node:fs";
import { readdir, realpath, stat } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { apiGroupOf, type KubeObject } from "../common/kube-object.js";
import { createSilentLogger, type Logger } from "../runtime/logger.js";
import { createSyncGate } from "../runtime/sync-gate.js";
import { type ParsedObject, parseManifest } from "./dir-parse.js";
import { createDirectoryWatchers } from "./dir-watch.js";
import { assembleObjectSource, createSnapshotPublisher, newProblems } from "./kube-snapshot.js";
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
/** How many file system calls (stat, read) a scan has in flight at most. */
const IO_CONCURRENCY = 32;
/**
 * Reads a whole file. The callback `readFile` costs about half of what
 * `fs/promises`' FileHandle-based one does per small file, which counts when
 * a directory holds thousands of manifests.
 */
const readFile = promisify(readFileCallback);
const MANIFEST_EXTENSIONS = [".yaml", ".yml", ".json"];

/** What the source keeps about one manifest file. */
interface FileState {
  /** Identity, size and times of the file when last read. */
  readonly signature: string;
  /** The last good objects of the file. */
  readonly objects: readonly ParsedObject[];
  /** The identity (see `identity`) of each of `objects`. */
  readonly identities: readonly string[];
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

/** What a scan found in one directory: its own entries, not its subdirectories'. */
interface DirectoryListing {
  /** The directory's `dev:inode` when it was listed. */
  readonly identity: string;
  /** Its real path (symbolic links resolved). */
  readonly real: string;
  /** Its manifest files, by path relative to the root. */
  readonly files: readonly (readonly [string, FoundFile])[];
  /** Its subdirectories (absolute path, relative path, `dev:inode`), by relative path. */
  readonly subdirectories: readonly (readonly [string, string, string])[];
}

/** What a scan found. */
interface ScanResult {
  /** The manifest files, by `/`-separated path relative to the root. */
  readonly files: Map<string, FoundFile>;
  /** The directories read (root included), absolute path → `dev:inode`, to watch. */
  readonly directories: Map<string, string>;
  /** Subdirectories that could not be read. */
  readonly problems: SourceProblem[];
  /** Each directory's own listing, by absolute path, for a later scan to reuse. */
  readonly listings: Map<string, DirectoryListing>;
}

/** What a rescan must list again: every directory, or the dirty ones. */
interface PendingScan {
  /** List every directory (the first scan, polling, a resync, a failed watch). */
  full: boolean;
  /** List these directories (a watch reported a change in them). */
  readonly dirty: Set<string>;
}

/** Options of {@link scanDirectory}. */
interface ScanOptions {
  /**
   * An earlier scan whose listings are reused for the directories not in
   * `dirty` (and of the same identity); undefined lists every directory.
   */
  readonly previous?: ScanResult;
  /** The directories to list again although `previous` has them. */
  readonly dirty?: ReadonlySet<string>;
  /** Called before a directory is listed (to start watching it first). */
  readonly beforeList?: (directory: string, identity: string) => void;
}

/** `dev:inode` of a file or directory. */
function identityOf(stats: { readonly dev: number; readonly ino: number }): string {
  return `${stats.dev}:${stats.ino}`;
}

/**
 * Lists the manifest files and the directories under `root` (following
 * symbolic links, each directory once). An unreadable subdirectory is a
 * problem; an unreadable root throws. With `options.previous`, a directory
 * that is not dirty and still has the identity its parent's listing saw is
 * not listed again: its earlier listing is reused, so a change in one
 * directory costs a listing of that directory, not of the whole tree.
 */
async function scanDirectory(root: string, options: ScanOptions = {}): Promise<ScanResult> {
  const files = new Map<string, FoundFile>();
  const directories = new Map<string, string>();
  const problems: SourceProblem[] = [];
  const listings = new Map<string, DirectoryListing>();
  const visited = new Set<string>();

  const record = (directory: string, listing: DirectoryListing): void => {
    directories.set(directory, listing.identity);
    listings.set(directory, listing);
    for (const [path, file] of listing.files) files.set(path, file);
  };

  const list = async (
    directory: string,
    relative: string,
    identity: string,
  ): Promise<DirectoryListing | undefined> => {
    let entries: string[];
    let real: string;
    try {
      real = await realpath(directory);
      if (visited.has(real)) return undefined;
      visited.add(real);
      options.beforeList?.(directory, identity);
      entries = await readdir(directory);
    } catch (error) {
      if (relative === "") throw error;
      if (errorCode(error) === "ENOENT") return undefined;
      problems.push({
        where: `${relative}/`,
        message: `cannot read directory: ${(error as Error).message}`,
      });
      return undefined;
    }
    const found: [string, FoundFile][] = [];
    const subdirectories: [string, string, string][] = [];
    await forEachLimited(
      entries.filter((name) => !isIgnoredName(name)),
      IO_CONCURRENCY,
      async (name) => {
        const absolute = join(directory, name);
        const path = relative === "" ? name : `${relative}/${name}`;
        let stats: Awaited<ReturnType<typeof stat>>;
        try {
          stats = await stat(absolute);
        } catch {
          return; // removed meanwhile, or a dangling link (a ConfigMap swap in progress)
        }
        if (stats.isDirectory()) subdirectories.push([absolute, path, identityOf(stats)]);
        else if (stats.isFile() && isManifestName(name)) {
          const signature = `${identityOf(stats)}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`;
          found.push([path, { absolute, signature, size: stats.size }]);
        }
      },
    );
    // Subdirectories in name order, so that of two links to one directory
    // the same one is always the one read.
    subdirectories.sort((a, b) => byCodeUnits(a[1], b[1]));
    return { identity, real, files: found, subdirectories };
  };

  const visit = async (directory: string, relative: string, identity: string): Promise<void> => {
    const earlier = options.previous?.listings.get(directory);
    let listing: DirectoryListing | undefined;
    if (earlier !== undefined && earlier.identity === identity && !options.dirty?.has(directory)) {
      if (visited.has(earlier.real)) return;
      visited.add(earlier.real);
      listing = earlier;
    } else {
      listing = await list(directory, relative, identity);
    }
    if (listing === undefined) return;
    record(directory, listing);
    for (const [absolute, path, subIdentity] of listing.subdirectories) {
      await visit(absolute, path, subIdentity);
    }
  };

  await visit(root, "", identityOf(await stat(root)));
  return { files, directories, problems, listings };
}

/**
 * Calls `task` for every item, with at most `limit` calls in flight; resolves
 * once all have settled, or rejects with the first failure.
 */
async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await task(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** How many distinct strings the source shares between its objects before it starts afresh. */
const MAX_INTERNED_STRINGS = 100_000;

/**
 * Compacts freshly parsed objects in place, for the source keeps them as
 * long as their files do not change: every string (object values, array
 * items; keys are shared by the engine already) is replaced by the equal
 * string in `table` (added when new), and every array by an exact-size copy.
 * Thousands of manifests repeat a few thousand strings (kinds, API versions,
 * port names, match and filter types), and every parse makes its own copies
 * of them; and a parser's arrays, grown one item at a time, keep room for
 * more. The table is cleared when it grows past {@link MAX_INTERNED_STRINGS},
 * so strings that went out of use are not kept forever.
 */
function compactObjects(objects: readonly ParsedObject[], table: Map<string, string>): void {
  if (table.size > MAX_INTERNED_STRINGS) table.clear();
  const shared = (text: string): string => {
    const known = table.get(text);
    if (known !== undefined) return known;
    table.set(text, text);
    return text;
  };
  /** Compacts `item` (a value of a container); returns what the container keeps. */
  const compact = (item: unknown): unknown => {
    if (typeof item === "string") return shared(item);
    if (Array.isArray(item)) {
      const copy = item.slice();
      stack.push(copy);
      return copy;
    }
    if (typeof item === "object" && item !== null) stack.push(item);
    return item;
  };
  const stack: object[] = objects.map((parsed) => parsed.object);
  for (let value = stack.pop(); value !== undefined; value = stack.pop()) {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = compact(value[i]);
      continue;
    }
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) record[key] = compact(record[key]);
  }
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
  /** The paths of `files` in code unit order; undefined when files were added or removed since. */
  let sortedPaths: string[] | undefined;
  /** The strings the objects share (see {@link compactObjects}). */
  const strings = new Map<string, string>();
  let scanProblems: SourceProblem[] = [];
  /** Whether a snapshot was assembled from `files` yet. */
  let assembled = false;
  /** The last scan, whose directory listings the next one reuses. */
  let lastScan: ScanResult | undefined;
  /** What the next rescan must look at again. */
  let pending: PendingScan = { full: false, dirty: new Set() };
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
    const keep = (problems: SourceProblem[]) => {
      if (previous === undefined) sortedPaths = undefined;
      files.set(path, {
        signature: found.signature,
        objects: previous?.objects ?? [],
        identities: previous?.identities ?? [],
        problems,
      });
    };
    if (found.size > MAX_FILE_BYTES) {
      keep([{ where: path, message: `is larger than ${MAX_FILE_BYTES} bytes; not read` }]);
      return;
    }
    let text: string;
    try {
      text = await readFile(found.absolute, "utf8");
    } catch (error) {
      if (errorCode(error) === "ENOENT" && files.delete(path)) sortedPaths = undefined;
      else keep([{ where: path, message: `cannot read file: ${(error as Error).message}` }]);
      return;
    }
    const parsed = parseManifest(text, path);
    if (parsed.problems.length > 0) {
      keep([...parsed.problems]);
      return;
    }
    compactObjects(parsed.objects, strings);
    if (!files.has(path)) sortedPaths = undefined;
    files.set(path, {
      signature: found.signature,
      objects: parsed.objects,
      identities: parsed.objects.map(({ object }) => identity(object)),
      problems: [],
    });
  };

  /** Builds the snapshot and problem list from `files` (first definition of an object wins). */
  const assemble = (): { objects: KubeObject[]; problems: SourceProblem[] } => {
    const objects: KubeObject[] = [];
    const problems: SourceProblem[] = [...scanProblems];
    /** Where each object is defined first: its file, and its index there. */
    const definedAt = new Map<string, [string, number]>();
    sortedPaths ??= [...files.keys()].sort(byCodeUnits);
    for (const path of sortedPaths) {
      const state = files.get(path) as FileState;
      problems.push(...state.problems);
      for (const [i, { object, line }] of state.objects.entries()) {
        const key = state.identities[i] as string;
        const first = definedAt.get(key);
        if (first !== undefined) {
          const [firstPath, firstIndex] = first;
          const firstLine = (files.get(firstPath) as FileState).objects[firstIndex]?.line;
          const message = `${describeObject(object)} is also defined at ${firstPath}:${firstLine}; this copy is ignored`;
          problems.push({ where: `${path}:${line}`, message });
          continue;
        }
        definedAt.set(key, [path, i]);
        objects.push(object);
      }
    }
    return { objects, problems };
  };

  /**
   * Rescans the directory (every directory when `work.full`, otherwise only
   * those in `work.dirty` and any new ones), re-reads changed files and
   * publishes the result.
   */
  const rescan = async (work: PendingScan): Promise<void> => {
    let found: ScanResult;
    try {
      found = await scanDirectory(root, {
        ...(work.full || lastScan === undefined ? {} : { previous: lastScan }),
        dirty: work.dirty,
        ...(options.watch === false
          ? {}
          : { beforeList: (directory, identity) => watchers.watch(directory, identity) }),
      });
    } catch (error) {
      // The directory went away (or became unreadable): keep what was read.
      scanProblems = [
        { where: root, message: `cannot read directory: ${(error as Error).message}` },
      ];
      updateProblems(assemble().problems);
      return;
    }
    lastScan = found;
    const scanProblemsChanged =
      JSON.stringify(found.problems) !== JSON.stringify(scanProblems) || !assembled;
    scanProblems = found.problems;
    const reread = [...found.files]
      .filter(([path, file]) => files.get(path)?.signature !== file.signature)
      .map(([path]) => path);
    await forEachLimited(reread, IO_CONCURRENCY, (path) =>
      readChanged(path, found.files.get(path) as FoundFile),
    );
    const removed = [...files.keys()].filter((path) => !found.files.has(path));
    for (const path of removed) files.delete(path);
    if (removed.length > 0) sortedPaths = undefined;
    if (stopped) return;
    // A directory watched only now may have changed since it was read: list it again.
    if (options.watch !== false) {
      for (const directory of watchers.update(found.directories)) schedule(directory);
    }
    if (reread.length === 0 && removed.length === 0 && !scanProblemsChanged) {
      logger.debug({ files: found.files.size }, "rescanned; nothing changed");
      return;
    }
    const { objects, problems } = assemble();
    assembled = true;
    updateProblems(problems);
    const changed = publisher.publish(objects, gate.synced);
    logger.debug(
      { reread: reread.slice(0, 20), rereadCount: reread.length, changed, objects: objects.length },
      "rescanned",
    );
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
    const work = pending;
    pending = { full: false, dirty: new Set() };
    scanning = rescan(work)
      .catch((error: unknown) => logger.error({ err: error }, "rescan failed"))
      .finally(() => {
        scanning = undefined;
        if (scanAgain && !stopped) {
          scanAgain = false;
          arm();
        }
      });
  };

  /**
   * Debounces a rescan of `directory` (of every directory when undefined):
   * quiet for `debounceMs`, but never later than ten times that.
   */
  const schedule = (directory?: string) => {
    if (stopped) return;
    if (directory === undefined) pending.full = true;
    else pending.dirty.add(directory);
    arm();
  };

  /** Starts (or pushes back) the debounce timer of the pending rescan. */
  const arm = () => {
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
    if (pollTimer === undefined && !stopped) {
      pollTimer = setInterval(() => schedule(), pollIntervalMs);
    }
  };

  const watchers = createDirectoryWatchers(
    (directory) => schedule(directory),
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
    if (resyncIntervalMs > 0) resyncTimer = setInterval(() => schedule(), resyncIntervalMs);
    scanning = rescan({ full: true, dirty: new Set() });
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
      arm();
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
