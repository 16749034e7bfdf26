/**
 * Clients of a registrar's mutual-TLS port for the tests, configured the way
 * the agent and aetherctl will be: the CAs of every bundle, a client
 * X.509-SVID (or none), and the registrar's SPIFFE ID checked instead of its
 * host name. Also the registrar flags that serve the shared test PKI.
 */
import { readFileSync } from "node:fs";
import { type TLSSocket, connect as tlsConnect } from "node:tls";
import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { ConfigService } from "../../gen/aether/registry/v1/config_service_pb.js";
import { spiffeServerIdentity } from "../../services/runtime/tls/peer-svid.js";
import { parseTrustBundle, type TrustBundles } from "../../services/runtime/tls/trust-bundle.js";
import type { TestSvid } from "./spiffe-ca.js";
import { AGENT_ID, REGISTRAR_ID, type SpiffePki } from "./test-spiffe-pki.js";

/** The bundles of the test PKI: hub.mesh (its JWKS) and east.mesh (its PEM). */
export function pkiBundles(pki: SpiffePki): TrustBundles {
  return new Map([
    ["hub.mesh", parseTrustBundle("hub.mesh", readFileSync(pki.bundles.hubJwks, "utf8"), "hub")],
    ["east.mesh", parseTrustBundle("east.mesh", readFileSync(pki.bundles.eastPem, "utf8"), "east")],
  ]);
}

/**
 * The registrar's TLS flags for the test PKI: its SVID (or `serving`),
 * both bundles, and `--authorize` the agent's ID unless `authorize` says
 * otherwise (empty: no `--authorize`).
 */
export function registrarTlsFlags(
  pki: SpiffePki,
  options: { readonly serving?: TestSvid; readonly authorize?: readonly string[] } = {},
): string[] {
  const serving = options.serving ?? pki.server;
  return [
    ...["--tls-cert-file", serving.cert, "--tls-key-file", serving.key],
    ...["--trust-domain-bundle", `hub.mesh=${pki.bundles.hubJwks}`],
    ...["--trust-domain-bundle", `east.mesh=${pki.bundles.eastPem}`],
    ...(options.authorize ?? [AGENT_ID]).flatMap((pattern) => ["--authorize", pattern]),
  ];
}

/**
 * The Node TLS options of a client presenting `svid` (none when undefined):
 * every bundle's CAs, and the registrar's SPIFFE ID checked against the
 * bundle of its trust domain. connect-node's `nodeOptions` and
 * `tls.connect` take them as they are.
 */
export function clientTlsOptions(pki: SpiffePki, svid?: TestSvid) {
  const bundles = pkiBundles(pki);
  return {
    ca: [...bundles.values()].flatMap((bundle) => bundle.authorities.map((ca) => ca.toString())),
    ...(svid === undefined ? {} : { cert: readFileSync(svid.cert), key: readFileSync(svid.key) }),
    checkServerIdentity: spiffeServerIdentity(() => bundles, { expectedId: REGISTRAR_ID }),
  };
}

/** The generated Connect client over TLS with `svid`, over HTTP/2 or HTTP/1.1. */
export function connectClient(
  url: string,
  pki: SpiffePki,
  svid: TestSvid | undefined,
  httpVersion: "2" | "1.1" = "2",
): Client<typeof ConfigService> {
  const transport = createConnectTransport({
    baseUrl: url,
    httpVersion,
    nodeOptions: clientTlsOptions(pki, svid),
  });
  return createClient(ConfigService, transport);
}

/** The generated client over gRPC-Web (HTTP/1.1) over TLS with `svid`. */
export function grpcWebClient(
  url: string,
  pki: SpiffePki,
  svid: TestSvid,
): Client<typeof ConfigService> {
  const transport = createGrpcWebTransport({
    baseUrl: url,
    httpVersion: "1.1",
    nodeOptions: clientTlsOptions(pki, svid),
  });
  return createClient(ConfigService, transport);
}

/** What one TLS connection saw: the server's serial, or the error; and whether it stayed open. */
export interface Handshake {
  readonly serverSerial?: string;
  readonly error?: Error;
}

/**
 * Makes one fresh TLS connection (no session reused) to `port` with `svid`
 * and resolves with the serial of the certificate the server presented, or
 * the error; the connection is closed.
 */
export function handshake(port: number, pki: SpiffePki, svid?: TestSvid): Promise<Handshake> {
  return new Promise((resolve) => {
    const socket: TLSSocket = tlsConnect({
      host: "127.0.0.1",
      port,
      ALPNProtocols: ["h2"],
      ...clientTlsOptions(pki, svid),
    });
    socket.once("error", (error) => resolve({ error }));
    socket.once("secureConnect", () => {
      const serverSerial = socket.getPeerCertificate().serialNumber;
      socket.destroy();
      resolve({ serverSerial });
    });
  });
}
