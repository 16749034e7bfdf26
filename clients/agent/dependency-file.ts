/**
 * The dependency file (`--deps-file`): the services a node's workloads call,
 * one `namespace/name` per line or several separated by commas or spaces,
 * with `#` comments. The agent follows the file: it is re-read (debounced)
 * when it changes, including when it is replaced by a rename (as editors and
 * ConfigMap volumes do). A bad entry is reported and ignored; a file that
 * cannot be read keeps the last set read from it.
 */
import { type FSWatcher, watch } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { checkServiceName } from "../../services/common/service-name.js";
import { createSilentLogger, type Logger } from "../../services/runtime/logger.js";

/** One entry of a dependency file that is not a service name. */
export interface DependencyProblem {
  /** The 1-based line of the entry (0 when the whole file is the problem). */
  readonly line: number;
  /** What is wrong, as a sentence. */
  readonly message: string;
}

/** What {@link parseDependencyList} found. */
export interface DependencyList {
  /** The valid services, sorted, without duplicates. */
  readonly services: readonly string[];
  /** The entries that were ignored, in file order. */
  readonly problems: readonly DependencyProblem[];
}

/**
 * Parses the text of a dependency file. Entries are separated by newlines,
 * commas or white space; `#` starts a comment that runs to the end of the
 * line. Every entry must be `namespace/name` (both DNS-1123 labels); the
 * others are returned as problems. Pure.
 */
export function parseDependencyList(text: string): DependencyList {
  const services = new Set<string>();
  const problems: DependencyProblem[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const content = raw.replace(/#.*$/, "");
    for (const entry of content.split(/[\s,]+/)) {
      if (entry === "") continue;
      const problem = checkServiceName(entry);
      if (problem === undefined) services.add(entry);
      else problems.push({ line: index + 1, message: problem });
    }
  });
  return { services: [...services].sort(), problems };
}

/** Options of {@link createDependencyFile}. */
export interface DependencyFileOptions {
  /** The file to follow. */
  readonly path: string;
  /** How long changes must be quiet before the file is re-read, in milliseconds (default 100). */
  readonly debounceMs?: number;
  /** A full re-read this often, as a safety net for missed events, in milliseconds (default 5000). */
  readonly resyncIntervalMs?: number;
  /** Where problems are logged; default silent. */
  readonly logger?: Logger;
}

/** A dependency file being followed. */
export interface DependencyFile {
  /** The services read from the file last time it could be read (empty before). */
  readonly services: readonly string[];
  /** The problems of the last read (bad entries, or why the file could not be read). */
  readonly problems: readonly DependencyProblem[];
  /** Reads the file once and starts following it; resolves after the first read. */
  start(): Promise<void>;
  /** Stops following the file. */
  stop(): void;
  /**
   * Registers a listener called after a re-read changed the service set or the
   * problems; returns a function that unregisters it.
   */
  onChange(listener: () => void): () => void;
}

/** Creates a follower of a dependency file; nothing is read until `start()`. */
export function createDependencyFile(options: DependencyFileOptions): DependencyFile {
  const { path } = options;
  const debounceMs = options.debounceMs ?? 100;
  const resyncIntervalMs = options.resyncIntervalMs ?? 5_000;
  const logger = (options.logger ?? createSilentLogger()).child({ depsFile: path });
  const listeners = new Set<() => void>();
  let services: readonly string[] = [];
  let problems: readonly DependencyProblem[] = [];
  let watcher: FSWatcher | undefined;
  let resync: NodeJS.Timeout | undefined;
  let debounce: NodeJS.Timeout | undefined;
  let reading: Promise<void> | undefined;
  let readAgain = false;
  let stopped = false;

  const describe = (list: readonly DependencyProblem[]) =>
    list.map((p) => `${p.line}:${p.message}`).join("\n");

  const read = async (): Promise<void> => {
    let next: DependencyList;
    try {
      next = parseDependencyList(await readFile(path, "utf8"));
    } catch (error) {
      const message = `cannot read the dependency file: ${(error as Error).message}; keeping the last set read`;
      next = { services, problems: [{ line: 0, message }] };
    }
    if (stopped) return;
    const changed =
      next.services.join(",") !== services.join(",") ||
      describe(next.problems) !== describe(problems);
    const before = new Set(problems.map((p) => `${p.line}:${p.message}`));
    for (const problem of next.problems) {
      if (!before.has(`${problem.line}:${problem.message}`)) {
        logger.warn({ line: problem.line }, `dependency file entry ignored: ${problem.message}`);
      }
    }
    services = next.services;
    problems = next.problems;
    if (changed) {
      logger.info({ services: services.length }, "dependency file read");
      for (const listener of [...listeners]) listener();
    }
  };

  const readNow = () => {
    debounce = undefined;
    if (stopped) return;
    if (reading !== undefined) {
      readAgain = true;
      return;
    }
    reading = read().finally(() => {
      reading = undefined;
      if (readAgain && !stopped) {
        readAgain = false;
        schedule();
      }
    });
  };

  const schedule = () => {
    if (stopped) return;
    if (debounce !== undefined) clearTimeout(debounce);
    debounce = setTimeout(readNow, debounceMs);
  };

  return {
    get services() {
      return services;
    },
    get problems() {
      return problems;
    },
    async start() {
      if (watcher !== undefined || resync !== undefined || stopped) return;
      // Watch the directory, not the file: a rename over the file (an
      // editor's save, a ConfigMap update) replaces the inode a file watch is on.
      const name = basename(path);
      try {
        watcher = watch(dirname(path), { persistent: false }, (_event, changed) => {
          if (changed === null || changed === name || changed.startsWith("..")) schedule();
        });
        watcher.on("error", (error) => {
          logger.warn(
            { err: error },
            "watching the dependency file failed; re-reading it periodically",
          );
          watcher?.close();
          watcher = undefined;
        });
      } catch (error) {
        logger.warn({ err: error }, "cannot watch the dependency file; re-reading it periodically");
      }
      resync = setInterval(schedule, resyncIntervalMs);
      resync.unref();
      reading = read();
      await reading;
      reading = undefined;
    },
    stop() {
      stopped = true;
      watcher?.close();
      watcher = undefined;
      if (resync !== undefined) clearInterval(resync);
      if (debounce !== undefined) clearTimeout(debounce);
      resync = debounce = undefined;
      listeners.clear();
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
