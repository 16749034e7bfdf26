/**
 * What the TLS port reports: refused handshakes and denied calls (counted by
 * reason, logged at warn at most once per reason per interval, the next line
 * saying how many were left out), the serving certificate's expiry, and the
 * TLS material's rotations (taken: logged at info; refused: logged at warn
 * and counted, the old material kept). Messages name certificates, IDs and
 * files, never key material.
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { Logger } from "../../runtime/logger.js";
import { createRateLimitedLog } from "../../runtime/rate-limited-log.js";
import {
  MATERIAL_REJECTION_REASONS,
  type MaterialRejection,
} from "../../runtime/tls/material-piece.js";
import type { TlsMaterial } from "../../runtime/tls/tls-material.js";
import { DENIED_CALL_REASONS, type DeniedCallReason } from "./call-authorization.js";
import { HANDSHAKE_FAILURE_REASONS, type HandshakeFailureReason } from "./handshake-failure.js";

/** The metric names {@link createTlsMetrics} registers. */
export const TLS_METRICS = {
  handshakeFailures: "aether_config_tls_handshake_failures_total",
  deniedCalls: "aether_config_denied_calls_total",
  certificateExpiry: "aether_config_tls_certificate_expiry_timestamp_seconds",
  materialUpdates: "aether_config_tls_material_updates_total",
  materialRejections: "aether_config_tls_material_rejections_total",
} as const;

/** See {@link createTlsMetrics}. Never throws. */
export interface TlsMetrics {
  /** A connection refused before it could call (`details`: its address, the why in words). */
  handshakeFailed(reason: HandshakeFailureReason, details: Record<string, unknown>): void;
  /** A call refused by `--authorize` (`details`: the caller's ID, the path). */
  callDenied(reason: DeniedCallReason, details: Record<string, unknown>): void;
  /** New handshakes use `material` now (`first`: at start, not a rotation). */
  materialTaken(material: TlsMaterial, first: boolean): void;
  /** A re-read of the TLS files was refused; the old material stays. */
  materialRefused(rejection: MaterialRejection): void;
}

/** Options of {@link createTlsMetrics}. */
export interface TlsMetricsOptions {
  readonly registry: Registry;
  readonly logger: Logger;
  /** The interval of the rate-limited lines, in milliseconds; default 10000. */
  readonly logIntervalMs?: number;
}

/** Reasons logged at debug: a TCP probe or a client that gave up is no news. */
const QUIET_REASONS: ReadonlySet<HandshakeFailureReason> = new Set(["connection_lost"]);

/** Registers the TLS port's metrics (every reason at 0) and returns what counts into them. */
export function createTlsMetrics(options: TlsMetricsOptions): TlsMetrics {
  const { registry, logger } = options;
  const log = createRateLimitedLog(logger, {
    intervalMs: options.logIntervalMs ?? 10_000,
    perInterval: 1,
  });
  const counter = (name: string, help: string, reasons: readonly string[]) => {
    const created = new Counter({ name, help, labelNames: ["reason"], registers: [registry] });
    for (const reason of reasons) created.inc({ reason }, 0);
    return created;
  };
  const handshakes = counter(
    TLS_METRICS.handshakeFailures,
    "Connections to the TLS port refused before they could call: the handshake failed, or the client's X.509-SVID was refused, by reason.",
    HANDSHAKE_FAILURE_REASONS,
  );
  const denied = counter(
    TLS_METRICS.deniedCalls,
    "Calls by verified clients that --authorize refused, by reason.",
    DENIED_CALL_REASONS,
  );
  const rejections = counter(
    TLS_METRICS.materialRejections,
    "Re-reads of the TLS certificate, key or bundle files that were refused (the old material stays), by reason.",
    MATERIAL_REJECTION_REASONS,
  );
  const updates = new Counter({
    name: TLS_METRICS.materialUpdates,
    help: "Rotations of the TLS material taken for new handshakes (certificate, key or bundles).",
    registers: [registry],
  });
  const expiry = new Gauge({
    name: TLS_METRICS.certificateExpiry,
    help: "When the serving certificate expires, in seconds since the epoch.",
    registers: [registry],
  });

  return {
    handshakeFailed(reason, details) {
      handshakes.inc({ reason });
      const level = QUIET_REASONS.has(reason) ? "debug" : "warn";
      log.log(level, `handshake-${reason}`, { reason, ...details }, "TLS connection refused");
    },
    callDenied(reason, details) {
      denied.inc({ reason });
      log.warn(`denied-${reason}`, { reason, ...details }, "call denied");
    },
    materialTaken(material, first) {
      const identity = material.identity;
      if (identity !== undefined) expiry.set(Math.floor(identity.notAfter / 1000));
      if (!first) updates.inc();
      logger.info(
        {
          generation: material.generation,
          serial: identity?.serial ?? null,
          spiffeId: identity?.spiffeId?.text ?? null,
          notAfter: identity === undefined ? null : new Date(identity.notAfter).toISOString(),
          trustDomains: [...material.bundles.keys()],
        },
        first ? "TLS material loaded" : "TLS material rotated: new handshakes use it",
      );
    },
    materialRefused(rejection) {
      rejections.inc({ reason: rejection.reason });
      logger.warn(
        { piece: rejection.piece, reason: rejection.reason, detail: rejection.message },
        "TLS material refused: the previous material stays in use",
      );
    },
  };
}
