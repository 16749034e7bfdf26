import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { parseAuthorizePattern } from "../../services/common/spiffe-authorize.js";
import { parseSpiffeId, type SpiffeId } from "../../services/common/spiffe-id.js";
import { decideCall } from "../../services/registrar/server/call-authorization.js";
import {
  HANDSHAKE_FAILURE_REASONS,
  tlsErrorReason,
} from "../../services/registrar/server/handshake-failure.js";
import { SVID_REFUSAL_REASONS } from "../../services/runtime/tls/svid-verify.js";

const id = (text: string) => parseSpiffeId(text).id as SpiffeId;
const pattern = (text: string) => {
  const parsed = parseAuthorizePattern(text);
  if (parsed.pattern === undefined) throw new Error(parsed.error);
  return parsed.pattern;
};
const AGENT = "spiffe://east.mesh/ns/aether-system/sa/aether-agent";
const PATH = "/aether.registry.v1.ConfigService/ListConfig";

describe("decideCall", () => {
  const agentOnly = { mutual: true, authorize: [pattern(AGENT)] };
  const east = { mutual: true, authorize: [pattern("spiffe://east.mesh/*")] };
  const cases: [string, SpiffeId | undefined, Parameters<typeof decideCall>[1], string][] = [
    [
      "a plaintext or server-only TLS port allows anyone",
      undefined,
      { mutual: false, authorize: [] },
      "allowed",
    ],
    [
      "mutual TLS without --authorize allows every verified ID",
      id(AGENT),
      { mutual: true, authorize: [] },
      "allowed",
    ],
    ["an exact pattern allows its ID", id(AGENT), agentOnly, "allowed"],
    [
      "an exact pattern denies another ID",
      id("spiffe://east.mesh/ns/other/sa/x"),
      agentOnly,
      "not_authorized",
    ],
    ["a prefix allows the IDs below it", id("spiffe://east.mesh/ns/other/sa/x"), east, "allowed"],
    [
      "a prefix denies another trust domain",
      id("spiffe://hub.mesh/ns/a/sa/b"),
      east,
      "not_authorized",
    ],
    ["a mutual port without a verified ID denies", undefined, east, "no_peer_identity"],
  ];
  it.each(cases)("%s", (_, peer, rules, expected) => {
    const decision = decideCall(peer, rules, PATH);
    expect(decision.allowed ? "allowed" : decision.reason).toBe(expected);
  });

  it("denies with PermissionDenied naming the caller's ID and the path", () => {
    expect(decideCall(id("spiffe://east.mesh/ns/other/sa/x"), agentOnly, PATH)).toEqual({
      allowed: false,
      reason: "not_authorized",
      code: Code.PermissionDenied,
      message: `spiffe://east.mesh/ns/other/sa/x is not authorized to call ${PATH} on this registrar (--authorize)`,
    });
    expect(decideCall(undefined, agentOnly, PATH)).toMatchObject({ code: Code.Unauthenticated });
  });
});

describe("tlsErrorReason", () => {
  const cases: [string | undefined, string][] = [
    ["ERR_SSL_HTTP_REQUEST", "not_tls"],
    ["ERR_SSL_WRONG_VERSION_NUMBER", "not_tls"],
    ["ERR_SSL_HTTPS_PROXY_REQUEST", "not_tls"],
    ["ERR_TLS_HANDSHAKE_TIMEOUT", "handshake_timeout"],
    ["ERR_SSL_TLSV1_ALERT_UNKNOWN_CA", "client_alert"],
    ["ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE", "client_alert"],
    ["ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED", "client_alert"],
    ["ECONNRESET", "connection_lost"],
    ["ERR_SSL_UNEXPECTED_EOF_WHILE_READING", "connection_lost"],
    ["ERR_SSL_NO_SHARED_CIPHER", "tls_error"],
    [undefined, "tls_error"],
  ];
  it.each(cases)("maps %s to %s", (code, reason) => {
    const error = Object.assign(new Error("x"), code === undefined ? {} : { code });
    expect(tlsErrorReason(error)).toBe(reason);
  });
  it("has no code for anything that is not an error", () => {
    expect(tlsErrorReason(null)).toBe("tls_error");
  });
  it("labels the counter with every TLS error and SVID refusal reason once", () => {
    expect(new Set(HANDSHAKE_FAILURE_REASONS).size).toBe(HANDSHAKE_FAILURE_REASONS.length);
    for (const reason of SVID_REFUSAL_REASONS) expect(HANDSHAKE_FAILURE_REASONS).toContain(reason);
  });
});
