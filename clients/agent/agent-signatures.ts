/**
 * End-to-end signature verification in the agent (`--origin-keys`,
 * `--require-signatures`): the signature check its import policy runs on
 * every projection it receives or restores from its cache, with the keys of
 * the followed keys file (`origin-keys-file.ts`), so that a registrar that
 * serves a forged, altered or unsigned value of another origin's projection
 * is refused here too (`unsigned`, `unknown_key`, `bad_signature`), and the
 * agent keeps the last good projection it had.
 *
 * Without `--origin-keys` there is no check at all: with no keys and nothing
 * required it could only pass everything, and it would cost a re-encoding of
 * every projection. `--require-signatures` without keys is a usage error
 * (`agent-flags.ts`).
 */
import {
  createSignatureCheck,
  type SignatureCheck,
} from "../../services/common/signature-check.js";
import type { Logger } from "../../services/runtime/logger.js";
import { NO_ORIGIN_KEYS, verifyWithKey } from "../../services/signing/origin-keys.js";
import type { AgentMetrics } from "./agent-metrics.js";
import { type OriginKeysFile, openOriginKeysFile } from "./origin-keys-file.js";

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
  /** Reads the keys file and follows it; rejects with an Error naming the file when it is bad. */
  open(): Promise<void>;
  /** Stops following the file. */
  close(): void;
}

/** Creates the agent's verification; nothing is read until `open()`. */
export function createAgentSignatures(options: AgentSignaturesOptions): AgentSignatures {
  const path = options.originKeysFile;
  let file: OriginKeysFile | undefined;
  let closed = false;
  const check =
    path === undefined
      ? undefined
      : createSignatureCheck({
          // Before open() nothing is checked (the policy runs only after it).
          keyring: () => file?.keys ?? NO_ORIGIN_KEYS,
          verify: verifyWithKey,
          require: options.require,
        });
  return {
    check,
    get keys() {
      return file?.keys.size ?? 0;
    },
    async open() {
      if (path === undefined || file !== undefined) return;
      const opened = await openOriginKeysFile({
        path,
        logger: options.logger,
        ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
        onReload: (result) => options.metrics.countOriginKeysReload(result),
        onKeysAdded: (added) => options.onKeysAdded(added),
      });
      if (closed) opened.close();
      else file = opened;
    },
    close() {
      closed = true;
      file?.close();
    },
  };
}
