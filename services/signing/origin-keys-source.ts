/**
 * An importer's `--origin-keys` file, kept current (the registrar and the
 * agent share it): read once at start (a bad file is a startup error naming
 * it), then re-read when it changes (see `watched-file.ts`). A refused
 * re-read keeps the keys in force; the caller logs `onRejected`'s sentence
 * and counts it. {@link createOriginKeysCheck} is the signature check over
 * whatever keys are in force at each judgement.
 */
import {
  createSignatureCheck,
  type OriginKeyring,
  type SignatureCheck,
} from "../common/signature-check.js";
import { NO_ORIGIN_KEYS, type OriginKeys, parseOriginKeys, verifyWithKey } from "./origin-keys.js";
import {
  createWatchedFile,
  readWatchedFile,
  type WatchedFile,
  type WatchedFileOptions,
} from "./watched-file.js";

/** Options of {@link createOriginKeysSource}. */
export interface OriginKeysSourceOptions
  extends Omit<WatchedFileOptions<OriginKeys>, "parse" | "initial" | "onUpdate"> {
  /** The keys read at start (see {@link readOriginKeysFile}); default: read now, throwing. */
  readonly initial?: OriginKeys;
  /**
   * Called with the keys of each accepted re-read (maybe the same keys as
   * before) and the keys they replace.
   */
  readonly onUpdate?: (keys: OriginKeys, previous: OriginKeys) => void;
}

/** The keys of a watched `--origin-keys` file. */
export interface OriginKeysSource {
  /** The keys in force. */
  readonly keys: OriginKeys;
  /** How many re-reads were refused so far (a counter's value). */
  readonly failures: number;
  /** Starts watching (the first check re-reads the file). Idempotent. */
  start(): void;
  /** Stops watching; no callback after it. Idempotent. */
  close(): void;
}

/** Reads and parses an origin-keys file now; throws an Error naming the file (never a key). */
export function readOriginKeysFile(path: string): OriginKeys {
  return readWatchedFile(path, parseOriginKeys);
}

/** Creates the source of `options.path`; nothing is watched until `start()`. */
export function createOriginKeysSource(options: OriginKeysSourceOptions): OriginKeysSource {
  const { onUpdate } = options;
  let previous = options.initial ?? readOriginKeysFile(options.path);
  const file: WatchedFile<OriginKeys> = createWatchedFile({
    ...options,
    parse: parseOriginKeys,
    initial: previous,
    onUpdate: (keys) => {
      const replaced = previous;
      previous = keys;
      onUpdate?.(keys, replaced);
    },
  });
  return {
    get keys() {
      return file.value;
    },
    get failures() {
      return file.failures;
    },
    start: () => file.start(),
    close: () => file.close(),
  };
}

/**
 * The signature check of an importer over `keys()` (called at each
 * judgement, so a re-read applies at once; default: no keys), verifying with
 * Node's `crypto`; `require` is `--require-signatures`.
 */
export function createOriginKeysCheck(
  keys: (() => OriginKeys) | undefined,
  require: boolean,
): SignatureCheck {
  const keyring: () => OriginKeyring<Parameters<typeof verifyWithKey>[0]> =
    keys ?? (() => NO_ORIGIN_KEYS);
  return createSignatureCheck({ keyring, verify: verifyWithKey, require });
}
