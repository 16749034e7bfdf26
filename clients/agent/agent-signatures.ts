/**
 * End-to-end signature verification in the agent (`--origin-keys`,
 * `--require-signatures`): the signature check its import policy runs on
 * every projection it receives or restores from its cache, with the keys of
 * the file the shared `services/signing/origin-keys-source.ts` follows (a
 * bad re-read keeps the keys in force, warns once and is counted; a key
 * added resyncs, see `origin-keys-reload.ts`), so that a registrar that
 * serves a forged, altered or unsigned value of another origin's projection
 * is refused here too (`unsigned`, `unknown_key`, `bad_signature`), and the
 * agent keeps the last good projection it had.
 *
 * Without `--origin-keys` there is no check at all: with no keys and nothing
 * required it could only pass everything, and it would cost a re-encoding of
 * every projection. `--require-signatures` without keys is a usage error
 * (`agent-flags.ts`).
 */
import type { SignatureCheck } from "../../services/common/signature-check.js";
import type { Logger } from "../../services/runtime/logger.js";
import { NO_ORIGIN_KEYS } from "../../services/signing/origin-keys.js";
import {
  createOriginKeysCheck,
  createOriginKeysSource,
  type OriginKeysSource,
} from "../../services/signing/origin-keys-source.js";
import type { AgentMetrics } from "./agent-metrics.js";
import { decideReload } from "./origin-keys-reload.js";

/** Options of {@link createAgentSignatures}. */
export interface AgentSignaturesOptions {
  /** The `--origin-keys` file; undefined: no verification. */
  readonly originKeysFile: string | undefined;
  /** Whether unsigned projections and unknown keys are refused. */
  readonly require: boolean;
  /** Logger. */
  readonly logger: Logger;
  /** Where re-reads are counted. */
  readonly metrics: Pick<AgentMetrics, "countOriginKeysReload">;
  /** The keys file re-stat period, in milliseconds; default 5000. */
  readonly pollIntervalMs?: number;
  /** Called when a re-read of the file added keys (the agent re-subscribes). */
  onKeysAdded(added: readonly string[]): void;
}

/** The agent's signature verification; see the module comment. */
export interface AgentSignatures {
  /** The check for the import policy; undefined without `--origin-keys`. */
  readonly check: SignatureCheck | undefined;
  /** How many keys are in force (0 before {@link AgentSignatures.open}). */
  readonly keys: number;
  /**
   * Reads the keys file and follows it; throws an Error starting
   * `--origin-keys: ` and naming the file (never a key) when it is bad.
   */
  open(): void;
  /** Stops following the file. */
  close(): void;
}

/**
 * Follows `path` with the shared source: a refused re-read is logged as a
 * warning naming the file and counted (once per refused content); a re-read
 * that changed the key ids is logged with them, counted, and a key added
 * calls `onKeysAdded` ({@link decideReload}).
 */
function followKeysFile(path: string, options: AgentSignaturesOptions): OriginKeysSource {
  const { logger } = options;
  let source: OriginKeysSource;
  try {
    source = createOriginKeysSource({
      path,
      ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
      onRejected: (problem) => {
        logger.warn({ file: path, problem }, "origin keys file refused; keeping the keys in force");
        options.metrics.countOriginKeysReload("refused");
      },
      onUpdate: (keys, previous) => {
        const reload = decideReload(previous, keys);
        if (reload.kind === "unchanged") return;
        const { added, removed } = reload;
        logger.info({ file: path, origins: keys.origins, added, removed }, "origin keys re-read");
        options.metrics.countOriginKeysReload("ok");
        if (reload.resync) options.onKeysAdded(added);
      },
    });
  } catch (error) {
    throw new Error(`--origin-keys: ${(error as Error).message}`);
  }
  const { keys } = source;
  logger.info({ file: path, origins: keys.origins, keys: keys.size }, "origin keys read");
  return source;
}

/** Creates the agent's verification; nothing is read until `open()`. */
export function createAgentSignatures(options: AgentSignaturesOptions): AgentSignatures {
  const path = options.originKeysFile;
  let source: OriginKeysSource | undefined;
  let closed = false;
  // Before open() nothing is checked (the policy runs only after it).
  const check =
    path === undefined
      ? undefined
      : createOriginKeysCheck(() => source?.keys ?? NO_ORIGIN_KEYS, options.require);
  return {
    check,
    get keys() {
      return source?.keys.size ?? 0;
    },
    open() {
      if (path === undefined || source !== undefined || closed) return;
      source = followKeysFile(path, options);
      source.start();
    },
    close() {
      closed = true;
      source?.close();
    },
  };
}
