/**
 * The registrar's signing files (`--origin-keys`, `--signing-key-file`), kept
 * current while it runs: the import policy's signature check over the
 * origin keys in force, and the key the export controller signs with. A
 * changed origin-keys file makes the cache judge the puts it refused for
 * their signature again (`onOriginKeys`); a new signing key (another key
 * id) makes the exporter re-sign everything (`onSigningKey`). A refused
 * re-read keeps what is in force, is logged as a warning naming the file
 * and the problem (never key material) and counted; the metrics are
 * registered here.
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { SignatureCheck } from "../common/signature-check.js";
import type { Logger } from "../runtime/logger.js";
import type { OriginKeys } from "../signing/origin-keys.js";
import {
  createOriginKeysCheck,
  createOriginKeysSource,
  type OriginKeysSource,
} from "../signing/origin-keys-source.js";
import { parseSigningKey, type SigningKey } from "../signing/signing-key.js";
import { createWatchedFile, readWatchedFile, type WatchedFile } from "../signing/watched-file.js";
import type { RegistrarConfig } from "./registrar-flags.js";

/** Options of {@link createRegistrarSigning}. */
export interface RegistrarSigningOptions {
  readonly config: Pick<RegistrarConfig, "signingKeyFile" | "originKeysFile" | "requireSignatures">;
  readonly logger: Logger;
  /** Called after each accepted re-read of `--origin-keys`. */
  readonly onOriginKeys?: (keys: OriginKeys) => void;
  /** Called when the signing key's id changed after a re-read of `--signing-key-file`. */
  readonly onSigningKey?: (key: SigningKey) => void;
  /** The re-stat period of both files in milliseconds; default 5000. */
  readonly pollIntervalMs?: number;
}

/** The registrar's signing state; see the module comment. */
export interface RegistrarSigning {
  /**
   * The import policy's signature check; undefined with neither
   * `--origin-keys` nor `--require-signatures` (nothing to check with).
   */
  readonly check: SignatureCheck | undefined;
  /** The key in force, or undefined without `--signing-key-file`. */
  signingKey(): SigningKey | undefined;
  /** The origin keys in force (undefined without `--origin-keys`). */
  originKeys(): OriginKeys | undefined;
  /** Registers the signing metrics in `registry`. */
  registerMetrics(registry: Registry): void;
  /** Starts watching the files. */
  start(): void;
  /** Stops watching. */
  close(): void;
}

/** Creates the signing state of `config`, reading its files now (throws naming a bad one). */
export function createRegistrarSigning(options: RegistrarSigningOptions): RegistrarSigning {
  const { config, logger } = options;
  const poll =
    options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs };
  const refused = (kind: string) => (problem: string) =>
    logger.warn({ problem }, `re-read of ${kind} refused; keeping the one in force`);
  const originKeys: OriginKeysSource | undefined =
    config.originKeysFile === undefined
      ? undefined
      : createOriginKeysSource({
          path: config.originKeysFile,
          ...poll,
          onRejected: refused(`--origin-keys ${config.originKeysFile}`),
          onUpdate: (keys) => {
            logger.info(
              { file: config.originKeysFile, origins: keys.origins, keys: keys.size },
              "origin keys read",
            );
            options.onOriginKeys?.(keys);
          },
        });
  const path = config.signingKeyFile;
  let signing: WatchedFile<SigningKey> | undefined;
  if (path !== undefined) {
    const initial = readWatchedFile(path, parseSigningKey);
    let keyId = initial.keyId;
    signing = createWatchedFile({
      path,
      parse: parseSigningKey,
      initial,
      ...poll,
      onRejected: refused(`--signing-key-file ${path}`),
      onUpdate: (key) => {
        if (key.keyId === keyId) return;
        logger.info({ file: path, keyId: key.keyId, previous: keyId }, "signing key changed");
        keyId = key.keyId;
        options.onSigningKey?.(key);
      },
    });
  }
  const check =
    originKeys === undefined && !config.requireSignatures
      ? undefined
      : createOriginKeysCheck(
          originKeys === undefined ? undefined : () => originKeys.keys,
          config.requireSignatures,
        );
  return {
    check,
    signingKey: () => signing?.value,
    originKeys: () => originKeys?.keys,
    registerMetrics(registry) {
      new Gauge({
        name: "aether_config_origin_keys",
        help: "Public keys of origins in force (--origin-keys).",
        registers: [registry],
        collect() {
          this.set(originKeys?.keys.size ?? 0);
        },
      });
      new Counter({
        name: "aether_config_origin_keys_reload_failures_total",
        help: "Re-reads of --origin-keys refused (the keys in force stay), once per refused content.",
        registers: [registry],
        collect() {
          this.reset();
          this.inc(originKeys?.failures ?? 0);
        },
      });
      new Counter({
        name: "aether_config_signing_key_reload_failures_total",
        help: "Re-reads of --signing-key-file refused (the key in force stays), once per refused content.",
        registers: [registry],
        collect() {
          this.reset();
          this.inc(signing?.failures ?? 0);
        },
      });
    },
    start() {
      originKeys?.start();
      signing?.start();
    },
    close() {
      originKeys?.close();
      signing?.close();
    },
  };
}
