/**
 * `fs.watch` on a set of directories, kept equal to the set wanted now: a
 * followed file's directory and its target's (a swapped symlink may move
 * the target). A directory that cannot be watched (gone, no inotify watches
 * left) or whose watcher fails is left out; the caller's periodic re-stat
 * covers it, and a later {@link DirectoryWatch.set} tries it again.
 */
import { type FSWatcher, watch } from "node:fs";

/** The watchers; see the module comment. */
export interface DirectoryWatch {
  /** Watches exactly `directories` (closing the others). Ignored once closed. */
  set(directories: ReadonlySet<string>): void;
  /** Closes every watcher; `onEvent` is not called after it. */
  close(): void;
}

/** Creates the watchers, calling `onEvent` for every event in any watched directory. */
export function createDirectoryWatch(onEvent: () => void): DirectoryWatch {
  const watchers = new Map<string, FSWatcher>();
  let closed = false;
  return {
    set(directories) {
      if (closed) return;
      for (const [directory, watcher] of watchers) {
        if (directories.has(directory)) continue;
        watcher.close();
        watchers.delete(directory);
      }
      for (const directory of directories) {
        if (watchers.has(directory)) continue;
        try {
          const watcher = watch(directory, { persistent: false }, () => {
            if (!closed) onEvent();
          });
          watcher.on("error", () => {
            watcher.close();
            if (watchers.get(directory) === watcher) watchers.delete(directory);
          });
          watchers.set(directory, watcher);
        } catch {
          // Unwatchable: the re-stat covers it.
        }
      }
    },
    close() {
      closed = true;
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}
