/**
 * The agent's side of mutual TLS with its registrar (`--tls-cert-file`,
 * `--tls-key-file`, `--trust-domain-bundle`, `--registrar-spiffe-id`): the
 * material, re-read as its files rotate (each new connection uses the
 * newest; a refused re-read keeps the last good and is logged), the
 * connection's TLS options and the interceptor that feeds the trust state
 * `/readyz` and the trust-failure metric report. A rotation while calls
 * fail on trust drops the connection, so that the new material is tried at
 * once; otherwise open connections and streams keep the material they were
 * made with.
 */
import type { Interceptor } from "@connectrpc/connect";
import type { ClientTlsConfig } from "../../services/process/client-tls-flags.js";
import type { Logger } from "../../services/runtime/logger.js";
import { type ClientTlsOptions, clientTlsOptions } from "../../services/runtime/tls/client-tls.js";
import {
  openTlsMaterialSource,
  type TlsMaterialSource,
} from "../../services/runtime/tls/tls-material-source.js";
import type { AgentMetrics } from "./agent-metrics.js";
import { createCallOutcomeInterceptor } from "./call-outcome.js";
import { createRegistrarTrust, type RegistrarTrust } from "./registrar-trust.js";

/** See {@link createAgentTls}. */
export interface AgentTls {
  /** Whether calls fail on trust now. */
  readonly trust: RegistrarTrust;
  /** What the registrar connection takes: its TLS options and interceptors (none without TLS). */
  readonly connection: { readonly tls?: ClientTlsOptions; readonly interceptors: Interceptor[] };
  /** Reads the material and follows its files; rejects naming the problem (the agent does not start). */
  open(): Promise<void>;
  /** Stops following the files. */
  close(): void;
}

/** Creates the agent's TLS side for `tls` (undefined: a plain http:// registrar). */
export function createAgentTls(
  tls: ClientTlsConfig | undefined,
  context: {
    now: () => number;
    metrics: AgentMetrics;
    logger: Logger;
    /** Drops the registrar connection (after a rotation while calls fail on trust). */
    dropConnection: (reason: string) => void;
  },
): AgentTls {
  const { metrics, logger } = context;
  const trust = createRegistrarTrust({
    now: context.now,
    onFailure: (failure, isNew) => {
      metrics.countTrustFailure(failure.reason);
      if (isNew) {
        logger.warn(
          { reason: failure.reason, err: failure.message },
          "the registrar connection fails on trust; serving the last-known route table",
        );
      }
    },
    onRecovered: () => logger.info("the registrar connection is trusted again"),
  });
  if (tls === undefined) {
    return { trust, connection: { interceptors: [] }, open: async () => {}, close: () => {} };
  }
  let source: TlsMaterialSource | undefined;
  const material = () => {
    if (source === undefined) throw new Error("the agent's TLS material is not read yet");
    return source.material;
  };
  return {
    trust,
    connection: {
      tls: clientTlsOptions(material, tls.registrarSpiffeId),
      interceptors: [createCallOutcomeInterceptor(trust)],
    },
    async open() {
      source = await openTlsMaterialSource({
        ...tls,
        onUpdate: (next) => {
          logger.info(
            { generation: next.generation, serial: next.identity?.serial },
            "TLS material rotated: new connections to the registrar use it",
          );
          // A connection refused or denied with the old material would be kept
          // (HTTP/2 stays up after PermissionDenied): connect again now.
          if (trust.failure !== undefined) {
            context.dropConnection("the TLS material rotated while calls fail on trust");
          }
        },
        onRejected: (rejection) =>
          logger.warn(
            { reason: rejection.reason, err: rejection.message },
            "TLS material refused; keeping the last good one",
          ),
      });
      const identity = source.material.identity;
      logger.info(
        { spiffeId: identity?.spiffeId?.text ?? null, serial: identity?.serial ?? null },
        "TLS material loaded",
      );
    },
    close: () => source?.close(),
  };
}
