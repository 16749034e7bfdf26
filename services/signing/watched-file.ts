/**
 * One file a long-running process re-reads when it changes (`--origin-keys`,
 * `--signing-key-file`), the way the TLS material is re-read
 * (`services/runtime/tls/`): `fs.watch` on the file's directory and its
 * target's (Kubernetes mounts a ConfigMap or Secret through a symlink swap)
 * and a re-stat every `pollIntervalMs` both take the file's stat signature;
 * a changed signature is read once the file has been quiet for the settle
 * time (`material-settle.ts`), and a read that does not parse is read again
 * after another settle (a write in progress) before it counts as refused.
 *
 * A refused read keeps the value in force, calls `onRejected` with the
 * parser's sentence (it must name the file, never its contents) once per
 * refused content, and counts it; a parsed read calls `onUpdate`. Nothing
 * here logs. The clock and timers are injectable.
 */
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { coalescedRun } from "../runtime/coalesced-run.js";
import { createDirectoryWatch } from "../runtime/directory-watch.js";
import { statSignature, watchedDirectories } from "../runtime/tls/material-files.js";
import { GLOBAL_TIMERS, type MaterialTimers } from "../runtime/tls/material-read.js";
import {
  DEFAULT_SETTLE_POLICY,
  observeRead,
  observeStat,
  type SettleAction,
  type SettlePolicy,
  type SettleState,
} from "../runtime/tls/material-settle.js";

/** Options of {@link createWatchedFile}. */
export interface WatchedFileOptions<T> {
  /** The file. */
  readonly path: string;
  /** Parses the file's text; throws an Error whose message names `path` (never the contents). */
  readonly parse: (text: string, path: string) => T;
  /** The value in force until the first accepted re-read (read at start, see {@link readWatchedFile}). */
  readonly initial: T;
  /** The re-stat period in milliseconds; default 5000. */
  readonly pollIntervalMs?: number;
  /** Watch the file's directories (default true); false leaves it to the re-stat. */
  readonly watch?: boolean;
  /** Quiet time and retries of a refused read; default {@link DEFAULT_SETTLE_POLICY}. */
  readonly settle?: SettlePolicy;
  readonly timers?: MaterialTimers;
  /** Called with each value read after a change of the file (maybe equal to the old one). */
  readonly onUpdate?: (value: T) => void;
  /** Called once per refused content with the parser's message; the old value stays. */
  readonly onRejected?: (message: string) => void;
}

/** A file kept current; see the module comment. */
export interface WatchedFile<T> {
  /** The value in force. */
  readonly value: T;
  /** How many re-reads were refused so far. */
  readonly failures: number;
  /** Starts watching and polling (the first check re-reads the file). Idempotent. */
  start(): void;
  /** Stops watching and polling; no callback after it. Idempotent. */
  close(): void;
}

/**
 * Reads and parses `path` once, synchronously (for a process's start: a bad
 * file is a startup error). Throws an Error naming the file.
 */
export function readWatchedFile<T>(path: string, parse: (text: string, path: string) => T): T {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new Error(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? "error"}`);
  }
  return parse(text, path);
}

/** Creates the watched file; nothing runs until `start()`. */
export function createWatchedFile<T>(options: WatchedFileOptions<T>): WatchedFile<T> {
  const { path, parse } = options;
  const timers = options.timers ?? GLOBAL_TIMERS;
  const policy = options.settle ?? DEFAULT_SETTLE_POLICY;
  let value = options.initial;
  let failures = 0;
  /** Unknown at first: the first turn reads the file (it may have changed since `initial`). */
  let settle: SettleState = { signature: "", pending: false, quietSince: -Infinity, retries: 0 };
  let lastRefused: string | undefined;
  let started = false;

  /** One read: the parsed value, or the refusal's message. */
  const read = async (): Promise<{ value: T } | { problem: string }> => {
    try {
      return { value: parse(await readFile(path, "utf8"), path) };
    } catch (error) {
      const { code, message } = error as NodeJS.ErrnoException;
      return { problem: code === undefined ? message : `cannot read ${path}: ${code}` };
    }
  };

  const decide = (outcome: { value: T } | { problem: string }): void => {
    if ("value" in outcome) {
      lastRefused = undefined;
      value = outcome.value;
      options.onUpdate?.(value);
      return;
    }
    if (outcome.problem === lastRefused) return;
    lastRefused = outcome.problem;
    failures++;
    options.onRejected?.(outcome.problem);
  };

  const directories = createDirectoryWatch(() => void check());
  let closed = false;
  let timer: unknown;
  let poll: unknown;

  /** One turn: a stat, and the read and decision the settle step calls for. */
  const turn = async (): Promise<SettleAction> => {
    const step = observeStat(settle, policy, timers.now(), await statSignature([path]));
    settle = step.state;
    if (step.action.kind !== "read") return step.action;
    const outcome = await read();
    const signature = await statSignature([path]);
    const consistent = "value" in outcome;
    const next = observeRead(settle, policy, timers.now(), { signature, consistent });
    settle = next.state;
    if (next.action.kind === "decide" && !closed) decide(outcome);
    return next.action;
  };

  /** Runs a turn and does what it says; one at a time, one more queued behind. */
  const check = coalescedRun(
    async () => {
      const action = await turn();
      if (closed) return;
      if (action.kind === "wait") {
        if (timer !== undefined) timers.clearTimeout(timer);
        timer = timers.setTimeout(
          () => {
            timer = undefined;
            void check();
          },
          Math.max(action.until - timers.now(), 1),
        );
      }
      // The directories as the file resolves now (a swapped symlink moves them).
      const wanted = options.watch === false ? new Set<string>() : await watchedDirectories([path]);
      if (!closed) directories.set(wanted);
    },
    () => closed,
  );

  return {
    get value() {
      return value;
    },
    get failures() {
      return failures;
    },
    start() {
      if (started || closed) return;
      started = true;
      poll = timers.setInterval(() => void check(), options.pollIntervalMs ?? 5_000);
      void check();
    },
    close() {
      closed = true;
      if (poll !== undefined) timers.clearInterval(poll);
      if (timer !== undefined) timers.clearTimeout(timer);
      directories.close();
    },
  };
}
