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
 *   followed while they stay inside the directory, so a ConfigMap volume's
 *   `name.yaml -> ..data/name.yaml` files are read, and any event (including
 *   a `..data` swap) triggers a rescan; a link that leads outside is a
 *   problem and is not read (unless `linksOutside`).
 * - No problem message quotes a file's content (a misplaced file may hold
 *   secrets): problems name the file, the line and what is wrong.
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
 *   first by path keeps it, the other is a problem (one per file, counting
 *   the file's copies, however many objects a duplicated manifest holds).
 * - Problems are bounded: repeats (same place, same message) are listed
 *   once, the first `MAX_SOURCE_PROBLEMS` (100) are kept and a final entry
 *   (`where` `(truncated)`) counts the rest; new problems are
 *   logged through a rate-limited log, a few lines a minute.
 * - Objects are returned as written: no namespace defaulting and no
 *   `creationTimestamp` (unless a manifest sets one), so route precedence
 *   ties fall through to the namespace/name order; see `normalizeObject`.
 *
 * The pieces: `dir-scan.ts` lists the tree, `dir-files.ts` keeps each file's
 * last good objects and assembles the snapshot, `dir-schedule.ts` decides
 * when to rescan, `dir-parse.ts` parses a file and `dir-watch.ts` watches the
 * directories; this module wires them into an {@link ObjectSource}.
 */
import { createSilentLogger, type Logger } from "../runtime/logger.js";
import { createRateLimitedLog } from "../runtime/rate-limited-log.js";
import { createSyncGate } from "../runtime/sync-gate.js";
import { createManifestFiles } from "./dir-files.js";
import { checkDirectory, type ScanResult, scanDirectory } from "./dir-scan.js";
import { createScanScheduler, type PendingScan } from "./dir-schedule.js";
import { createDirectoryWatchers } from "./dir-watch.js";
import { assembleObjectSource, createSnapshotPublisher, newProblems } from "./kube-snapshot.js";
import type { ObjectSource, SourceProblem } from "./object-source.js";
import { boundProblems } from "./source-problems.js";

export { isIgnoredName } from "./dir-scan.js";

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
  /**
   * Follow symbolic links that lead outside `path` (default false: such a
   * link is reported as a problem and not read; the links of a mounted
   * ConfigMap stay inside its directory and are followed).
   */
  readonly linksOutside?: boolean;
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
  const pollIntervalMs = options.pollIntervalMs ?? 1_000;
  const logger = (options.logger ?? createSilentLogger()).child({ source: name });
  const publisher = createSnapshotPublisher(logger, name);
  const problemLog = createRateLimitedLog(logger);
  const gate = createSyncGate();

  const manifests = createManifestFiles();
  let scanProblems: SourceProblem[] = [];
  /** Whether a snapshot was assembled from the files yet. */
  let assembled = false;
  /** The last scan, whose directory listings the next one reuses. */
  let lastScan: ScanResult | undefined;
  let currentProblems: readonly SourceProblem[] = [];
  let stopped = false;

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
        linksOutside: options.linksOutside === true,
        ...(options.watch === false
          ? {}
          : { beforeList: (directory, identity) => watchers.watch(directory, identity) }),
      });
    } catch (error) {
      // The directory went away (or became unreadable): keep what was read.
      scanProblems = [
        { where: root, message: `cannot read directory: ${(error as Error).message}` },
      ];
      updateProblems(manifests.assemble(scanProblems).problems);
      return;
    }
    lastScan = found;
    const scanProblemsChanged =
      JSON.stringify(found.problems) !== JSON.stringify(scanProblems) || !assembled;
    scanProblems = found.problems;
    const { reread, removed } = manifests.plan(found.files);
    await manifests.read(reread, found.files);
    manifests.forget(removed);
    if (stopped) return;
    // A directory watched only now may have changed since it was read: list it again.
    if (options.watch !== false) {
      for (const directory of watchers.update(found.directories)) scheduler.request(directory);
    }
    if (reread.length === 0 && removed.length === 0 && !scanProblemsChanged) {
      logger.debug({ files: found.files.size }, "rescanned; nothing changed");
      return;
    }
    const { objects, problems } = manifests.assemble(scanProblems);
    assembled = true;
    updateProblems(problems);
    const changed = publisher.publish(objects, gate.synced);
    logger.debug(
      { reread: reread.slice(0, 20), rereadCount: reread.length, changed, objects: objects.length },
      "rescanned",
    );
  };

  /**
   * Replaces the problem list with `found` bounded (see {@link boundProblems}),
   * logging the problems that appeared (rate-limited) and noting when all cleared.
   */
  const updateProblems = (found: readonly SourceProblem[]) => {
    const problems = boundProblems(found);
    for (const problem of newProblems(currentProblems, problems)) {
      problemLog.warn(
        "manifest-problem",
        { where: problem.where },
        `manifest problem: ${problem.message}`,
      );
    }
    if (currentProblems.length > 0 && problems.length === 0)
      logger.info("manifest problems cleared");
    currentProblems = Object.freeze(problems);
  };

  const scheduler = createScanScheduler({
    debounceMs: options.debounceMs ?? 100,
    poll: options.watch === false,
    pollIntervalMs,
    resyncIntervalMs: options.resyncIntervalMs ?? 60_000,
    logger,
    scan: rescan,
  });

  const watchers = createDirectoryWatchers(
    (directory) => scheduler.request(directory),
    (directory, error) => {
      if (!scheduler.polling) {
        logger.warn(
          { err: error, directory },
          `cannot watch a directory; polling every ${pollIntervalMs} ms as well`,
        );
      }
      scheduler.startPolling();
    },
  );

  /** Checks the directory, runs the first scan (which starts the watches) and the timers. */
  const initialise = async () => {
    await checkDirectory(root);
    if (stopped) return;
    await scheduler.start(() => {
      gate.open();
      logger.info(
        { objects: publisher.snapshot().length, problems: currentProblems.length },
        "manifests read",
      );
    });
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
      await scheduler.stop();
      problemLog.flush();
    },
    problems: () => currentProblems,
  });
}
