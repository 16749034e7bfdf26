/**
 * The client TLS flags (agent and aetherctl): what each combination gives,
 * and each usage error naming its flag. Also how a failed call is
 * classified as a trust failure.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { parseClientTlsFlags } from "../../services/process/client-tls-flags.js";
import { SvidRefusedError } from "../../services/runtime/tls/peer-svid.js";
import { trustFailureOf } from "../../services/runtime/tls/registrar-call-failure.js";

const HTTPS = "https://registrar.hub:8443";
const ID = "spiffe://hub.mesh/ns/aether-system/sa/aether-registrar";

describe("parseClientTlsFlags", () => {
  it("gives nothing for http:// without flags, and the system CAs for https:// without flags", () => {
    expect(parseClientTlsFlags("http://127.0.0.1:8080", {})).toBeUndefined();
    expect(parseClientTlsFlags(HTTPS, {})).toEqual({ bundleFiles: new Map() });
  });

  it("takes the pair, the bundles and the registrar's ID", () => {
    expect(
      parseClientTlsFlags(HTTPS, {
        "tls-cert-file": "/svid/cert.pem",
        "tls-key-file": "/svid/key.pem",
        "trust-domain-bundle": ["hub.mesh=/b/hub.json", "spiffe://east.mesh=/b/east.pem"],
        "registrar-spiffe-id": ID,
      }),
    ).toEqual({
      certFile: "/svid/cert.pem",
      keyFile: "/svid/key.pem",
      bundleFiles: new Map([
        ["hub.mesh", "/b/hub.json"],
        ["east.mesh", "/b/east.pem"],
      ]),
      registrarSpiffeId: ID,
    });
  });

  it.each([
    [
      "http://127.0.0.1:8080",
      { "tls-cert-file": "c" },
      '--tls-cert-file need an https:// registrar (got "http://127.0.0.1:8080")',
    ],
    [HTTPS, { "tls-cert-file": "c" }, "--tls-cert-file and --tls-key-file go together"],
    [HTTPS, { "tls-key-file": "k" }, "--tls-cert-file and --tls-key-file go together"],
    [HTTPS, { "trust-domain-bundle": ["hub.mesh"] }, "is not TRUST_DOMAIN=PATH"],
    [HTTPS, { "registrar-spiffe-id": "spiffe://hub.mesh" }, "names a trust domain"],
    [HTTPS, { "registrar-spiffe-id": "https://x" }, "--registrar-spiffe-id:"],
    [
      HTTPS,
      { "registrar-spiffe-id": ID, "trust-domain-bundle": ["east.mesh=/e.pem"] },
      "no --trust-domain-bundle for its trust domain hub.mesh",
    ],
  ])("%s %j is a usage error", (registrar, values, message) => {
    expect(() => parseClientTlsFlags(registrar, values)).toThrow(message);
  });
});

describe("trustFailureOf", () => {
  const wrap = (cause: Error, code = Code.Unavailable) =>
    new ConnectError(cause.message, code, undefined, undefined, cause);

  it.each([
    [
      wrap(new SvidRefusedError("unexpected_spiffe_id", "the peer is spiffe://hub.mesh/x")),
      "unexpected_spiffe_id",
    ],
    [
      wrap(Object.assign(new Error("certificate has expired"), { code: "CERT_HAS_EXPIRED" })),
      "expired",
    ],
    [
      wrap(Object.assign(new Error("wrong version"), { code: "ERR_SSL_WRONG_VERSION_NUMBER" })),
      "tls_handshake",
    ],
    [new ConnectError("socket hang up", Code.Unavailable), "refused_by_registrar"],
    [
      new ConnectError("http/2 stream closed with error code CANCEL", Code.Canceled),
      "refused_by_registrar",
    ],
    [
      new ConnectError("caller spiffe://east.mesh/x is not authorized", Code.PermissionDenied),
      "permission_denied",
    ],
  ])("%s is %s", (error, reason) => {
    expect(trustFailureOf(error)?.reason).toBe(reason);
  });

  it("is undefined for other failures", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    expect(trustFailureOf(wrap(refused))).toBeUndefined();
    expect(trustFailureOf(new ConnectError("deadline", Code.DeadlineExceeded))).toBeUndefined();
    expect(trustFailureOf(new ConnectError("no such service", Code.NotFound))).toBeUndefined();
  });
});
