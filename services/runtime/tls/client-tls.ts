/**
 * A registrar client's side of mutual TLS (the agent and aetherctl): the
 * Node connect options that present the client's X.509-SVID and trust every
 * bundle's CAs, and check the registrar's SPIFFE ID instead of its host name
 * when one is expected. The material is read at every new connection, so a
 * rotated certificate or bundle serves the next connection while open ones
 * keep theirs.
 */
import type { ConnectionOptions, SecureContext } from "node:tls";
import { spiffeServerIdentity } from "./peer-svid.js";
import type { TlsMaterial } from "./tls-material.js";

/** The connect options of {@link clientTlsOptions}: `tls.connect`, `http2.connect` and connect-node's `nodeOptions` take them. */
export type ClientTlsOptions = Pick<ConnectionOptions, "secureContext" | "checkServerIdentity">;

/**
 * The client options over `material()` (read when a connection is made:
 * `secureContext` is a getter). With `registrarSpiffeId`, the server must
 * present an X.509-SVID with that ID chained to its trust domain's bundle
 * and its host name is not checked; without it, Node checks the host name
 * against the certificate's DNS and IP names as usual.
 */
export function clientTlsOptions(
  material: () => TlsMaterial,
  registrarSpiffeId?: string,
): ClientTlsOptions {
  const options: { readonly secureContext: SecureContext } = {
    get secureContext() {
      return material().secureContext;
    },
  };
  if (registrarSpiffeId === undefined) return options;
  const checkServerIdentity = spiffeServerIdentity(() => material().bundles, {
    expectedId: registrarSpiffeId,
  });
  return Object.defineProperty(options, "checkServerIdentity", {
    value: checkServerIdentity,
    enumerable: true,
  }) as ClientTlsOptions;
}
