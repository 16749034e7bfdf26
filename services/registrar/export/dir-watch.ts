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
   * Returns true when it started a watch, since changes made before a watch
   * started were not reported: the caller should scan once more.
   */
  update(directories: ReadonlyMap<string, string>): boolean;
  /** How many directories are watched. */
  readonly size: number;
  /** Stops every watch. */
  close(): void;
}

/**
 * Creates an empty set of directory watchers. `onEvent` is called for every
 * change reported in a watched directory (and when a watch fails, after
 * which the directory is watched again at the next `update`);
 * `onUnwatchable` when a directory cannot be watched at all (for example
 * when the inotify watch limit is reached), so that the caller can poll.
 */
export function createDirectoryWatchers(
  onEvent: () => void,
  onUnwatchable: (directory: string, error: Error) => void,
): DirectoryWatchers {
  const watchers = new Map<string, { readonly identity: string; readonly watcher: FSWatcher }>();

  const unwatch = (directory: string) => {
    watchers.get(directory)?.watcher.close();
    watchers.delete(directory);
  };

  return {
    update(directories) {
      for (const [directory, entry] of [...watchers]) {
        if (directories.get(directory) !== entry.identity) unwatch(directory);
      }
      let added = false;
      for (const [directory, identity] of directories) {
        if (watchers.has(directory)) continue;
        try {
          const watcher = watch(directory, { persistent: true }, () => onEvent());
          watcher.on("error", () => {
            if (watchers.get(directory)?.watcher === watcher) unwatch(directory);
            else watcher.close();
            onEvent();
          });
          watchers.set(directory, { identity, watcher });
          added = true;
        } catch (error) {
          // A directory removed since the scan is simply not watched; the next scan drops it.
          if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
            onUnwatchable(directory, error as Error);
          }
        }
      }
      return added;
    },
    get size() {
      return watchers.size;
    },
    close() {
      for (const directory of [...watchers.keys()]) unwatch(directory);
    },
  };
}
