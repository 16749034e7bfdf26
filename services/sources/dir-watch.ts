/**
 * Watches a set of directories, each with its own non-recursive `fs.watch`
 * (inotify on Linux), and says when anything in one of them changes. The
 * directory source updates the set after every scan.
 *
 * Why not `fs.watch(root, { recursive: true })`: on Linux, Node.js 20
 * implements it in JavaScript with one watcher per file, and a file replaced
 * by a rename (as editors, `kubectl cp` and atomic writers do) keeps a
 * watcher on the old, deleted inode, so deleting the new file later goes
 * unnoticed. A directory's own watcher sees every entry created, deleted,
 * renamed, written or touched in it, whatever happens to the files.
 */
import { type FSWatcher, watch } from "node:fs";

/** See {@link createDirectoryWatchers}. */
export interface DirectoryWatchers {
  /**
   * Watches exactly `directories` (absolute path → identity such as
   * `dev:inode`): stops watching the others, and (re)watches a path that is
   * new or whose identity changed (a directory deleted and created again).
   * Returns the directories it started watching, since changes made in them
   * before their watch started were not reported: the caller should scan
   * them once more.
   */
  update(directories: ReadonlyMap<string, string>): string[];
  /**
   * Starts watching one directory (of identity `identity`) unless it is
   * watched already; a scan calls this before it lists a directory, so that
   * no change after the listing goes unreported. Returns whether it started.
   */
  watch(directory: string, identity: string): boolean;
  /** How many directories are watched. */
  readonly size: number;
  /** Stops every watch. */
  close(): void;
}

/**
 * Creates an empty set of directory watchers. `onEvent` is called with the
 * directory for every change reported in a watched directory, and without
 * one when a watch fails (after which the directory is watched again at the
 * next `update`; what changed meanwhile is unknown); `onUnwatchable` when a
 * directory cannot be watched at all (for example when the inotify watch
 * limit is reached), so that the caller can poll.
 */
export function createDirectoryWatchers(
  onEvent: (directory: string | undefined) => void,
  onUnwatchable: (directory: string, error: Error) => void,
): DirectoryWatchers {
  const watchers = new Map<string, { readonly identity: string; readonly watcher: FSWatcher }>();

  const unwatch = (directory: string) => {
    watchers.get(directory)?.watcher.close();
    watchers.delete(directory);
  };

  /** Starts watching `directory` unless it is watched as `identity` already; true when it started. */
  const start = (directory: string, identity: string): boolean => {
    const current = watchers.get(directory);
    if (current?.identity === identity) return false;
    if (current !== undefined) unwatch(directory);
    try {
      const watcher = watch(directory, { persistent: true }, () => onEvent(directory));
      watcher.on("error", () => {
        if (watchers.get(directory)?.watcher === watcher) unwatch(directory);
        else watcher.close();
        onEvent(undefined);
      });
      watchers.set(directory, { identity, watcher });
      return true;
    } catch (error) {
      // A directory removed since the scan is simply not watched; the next scan drops it.
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
        onUnwatchable(directory, error as Error);
      }
      return false;
    }
  };

  return {
    update(directories) {
      for (const [directory, entry] of [...watchers]) {
        if (directories.get(directory) !== entry.identity) unwatch(directory);
      }
      const started: string[] = [];
      for (const [directory, identity] of directories) {
        if (!watchers.has(directory) && start(directory, identity)) started.push(directory);
      }
      return started;
    },
    watch: start,
    get size() {
      return watchers.size;
    },
    close() {
      for (const directory of [...watchers.keys()]) unwatch(directory);
    },
  };
}
