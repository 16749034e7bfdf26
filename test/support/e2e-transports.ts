/**
 * The transports the central e2e scenarios run over, once each
 * (`describe.each(E2E_TRANSPORTS)`): plaintext, and mutual TLS with a CA per
 * cluster's trust domain (e2e-mesh-pki.ts).
 */
import { afterAll, beforeAll } from "vitest";
import { createMeshPki, type MeshPki } from "./e2e-mesh-pki.js";

/** Every transport of the e2e scenarios. */
export const E2E_TRANSPORTS = ["plaintext", "mTLS"] as const;

/** One of {@link E2E_TRANSPORTS}. */
export type E2eTransport = (typeof E2E_TRANSPORTS)[number];

/** What {@link useTransport} gives a suite; read it in hooks and tests only. */
export interface SuiteTransport {
  readonly transport: E2eTransport;
  /** The PKI over mutual TLS (pass it as `tls` to startClusterRegistrar); undefined over plaintext. */
  readonly tls: MeshPki | undefined;
}

/**
 * Registers the hooks that make (mTLS) and remove the PKI of `clusters` for
 * the enclosing describe. Call it before the suite's own `beforeAll`, which
 * then sees the PKI.
 */
export function useTransport(transport: E2eTransport, clusters: readonly string[]): SuiteTransport {
  let pki: MeshPki | undefined;
  beforeAll(async () => {
    if (transport === "mTLS") pki = await createMeshPki(clusters);
  }, 30_000);
  afterAll(async () => {
    await pki?.remove();
  });
  return {
    transport,
    get tls() {
      return pki;
    },
  };
}
