/**
 * The agent's `--origin-keys` file, followed: read once at start (a bad file
 * is a startup error naming it), then re-read when it changes. An I/O shell
 * over {@link decideReload}: `fs.watch` on the file's directory and on its
 * target's (a ConfigMap volume swaps a symlink; an editor renames over the
 * file) and a re-stat every `pollIntervalMs` (a missed or impossible watch)
 * both compare the file's stat signature; a changed one is read once the
 * events have been quiet for `debounceMs`. A refused re-read keeps the keys
 * in force, logs a warning naming the file and the problem, and is reported
 * (`onReload("refused")`) once per content; a re-read that adds a key calls
 * `onKeysAdded`. Nothing logged holds key material (key ids are hashes).
 */
import { readFile } from "node:fs/promises";
import { coalescedRun } from "../../services/runtime/coalesced-run.js";
import { createDirectoryWatch } from "../../services/runtime/directory-watch.js";
import type { Logger } from "../../services/runtime/logger.js";
import { statSignature, watchedDirectories } from "../../services/runtime/tls/material-files.js";
import { NO_ORIGIN_KEYS, type OriginKeys } from "../../services/signing/origin-keys.js";
import { decideReload, type KeysFileRead } from "./origin-keys-reload.js";

/** Options of {@link openOriginKeysFile}. */
export interface OriginKeysFileOptions {
  /** The file. */
  readonly path: string;
  /** Where re-reads are logged. */
  readonly logger: Logger;
  /** How long change events must be quiet before the file is re-read, in milliseconds; default 100. */
  readonly debounceMs?: number;
  /** The re-stat period, in milliseconds; default 5000. */
  readonly pollIntervalMs?: number;
  /** Called after each re-read (not the first read): used, or refused. */
  onReload?(result: "ok" | "refused"): void;
  /** Called after a re-read that added keys, with their `origin/keyId`. */
  onKeysAdded?(added: readonly string[]): void;
}

/** A followed keys file; see the module comment. */
export interface OriginKeysFile {
  /** The keys in force. */
  readonly keys: OriginKeys;
  /** Stops watching and re-stating; no callback after it. */
  close(): void;
}

async function readKeysFile(path: string): Promise<KeysFileRead> {
  try {
    return { text: await readFile(path, "utf8") };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/**
 * Reads the file at `options.path` and follows it (see the module comment).
 * Rejects with an Error naming the file when the first read is refused.
 */
export async function openOriginKeysFile(options: OriginKeysFileOptions): Promise<OriginKeysFile> {
  const { path, logger } = options;
  let seen = await statSignature([path]);
  const first = decideReload(NO_ORIGIN_KEYS, await readKeysFile(path), path);
  if (first.kind === "refused") throw new Error(`--origin-keys: ${first.problem}`);
  let keys = first.kind === "loaded" ? first.keys : NO_ORIGIN_KEYS;
  logger.info({ file: path, origins: keys.origins, keys: keys.size }, "origin keys read");
  const directories = createDirectoryWatch(() => schedule());
  let debounce: NodeJS.Timeout | undefined;
  let closed = false;

  /** Stats the file; re-reads it when its signature changed. One at a time, one queued. */
  const check = coalescedRun(
    async () => {
      const signature = await statSignature([path]);
      if (closed || signature === seen) return;
      seen = signature;
      const read = await readKeysFile(path);
      if (closed) return;
      apply(decideReload(keys, read, path));
      await watchDirectories();
    },
    () => closed,
  );

  const apply = (outcome: ReturnType<typeof decideReload>) => {
    if (outcome.kind === "refused") {
      logger.warn(
        { file: path, problem: outcome.problem },
        "origin keys file refused; keeping the keys in force",
      );
      options.onReload?.("refused");
      return;
    }
    options.onReload?.("ok");
    if (outcome.kind === "unchanged") return;
    keys = outcome.keys;
    const { added, removed } = outcome;
    logger.info({ file: path, origins: keys.origins, added, removed }, "origin keys re-read");
    if (added.length > 0) options.onKeysAdded?.(added);
  };

  const schedule = () => {
    if (closed) return;
    if (debounce !== undefined) clearTimeout(debounce);
    debounce = setTimeout(() => {
      debounce = undefined;
      void check();
    }, options.debounceMs ?? 100);
  };

  /** Watches the directories of the file as it resolves now (a swapped symlink may move it). */
  const watchDirectories = async () => {
    const wanted = await watchedDirectories([path]);
    if (!closed) directories.set(wanted);
  };

  const poll = setInterval(() => void check(), options.pollIntervalMs ?? 5_000);
  poll.unref();
  await watchDirectories();
  // A change between the first read and the watch: the first check sees it.
  void check();

  return {
    get keys() {
      return keys;
    },
    close() {
      closed = true;
      clearInterval(poll);
      if (debounce !== undefined) clearTimeout(debounce);
      directories.close();
    },
  };
}
