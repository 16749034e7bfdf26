/**
 * The SVID guard on an HTTP/2 secure server (HTTP/1.1 allowed), as the
 * registrar will serve ConfigService, with certificates this test makes:
 * an accepted client's request sees its SPIFFE ID through the request's
 * socket (HTTP/2's proxy or HTTP/1.1's socket); a refused client's request,
 * sent right behind its handshake, never reaches the request handler.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { connect, createSecureServer, type Http2SecureServer } from "node:http2";
import { request as httpsRequest } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SvidVerification } from "../../services/runtime/tls/svid-verify.js";
import { guardTlsServer, peerSpiffeId } from "../../services/runtime/tls/tls-server-guard.js";
import { parseTrustBundle, type TrustBundles } from "../../services/runtime/tls/trust-bundle.js";
import type { TestSvid } from "../support/spiffe-ca.js";
import { AGENT_ID, createSpiffePki, type SpiffePki } from "../support/test-spiffe-pki.js";
import { waitFor } from "../support/wait.js";

let dir: string;
let pki: SpiffePki;
let server: Http2SecureServer;
let port: number;
let ca: Buffer[];
let handled = 0;
const refused: SvidVerification[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-h2-guard-"));
  pki = await createSpiffePki(dir);
  const bundles: TrustBundles = new Map([
    ["hub.mesh", parseTrustBundle("hub.mesh", readFileSync(pki.bundles.hubJwks, "utf8"), "hub")],
    ["east.mesh", parseTrustBundle("east.mesh", readFileSync(pki.bundles.eastPem, "utf8"), "east")],
  ]);
  ca = [readFileSync(pki.hubCa.cert), readFileSync(pki.eastRoot.cert)];
  server = createSecureServer(
    {
      cert: readFileSync(pki.server.cert),
      key: readFileSync(pki.server.key),
      ca,
      requestCert: true,
      rejectUnauthorized: false,
      allowHTTP1: true,
    },
    (req, res) => {
      handled += 1;
      res.end(`${req.httpVersion} ${peerSpiffeId(req.socket)?.text ?? "(none)"}`);
    },
  );
  guardTlsServer(server, { bundles: () => bundles, onRefused: (verdict) => refused.push(verdict) });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await rm(dir, { recursive: true, force: true });
});

/** An HTTP/2 GET with `svid`'s certificate: the status and body, or how it ended. */
function h2Get(svid: TestSvid): Promise<string> {
  return new Promise((resolve) => {
    const session = connect(`https://127.0.0.1:${port}`, {
      ca,
      cert: readFileSync(svid.cert),
      key: readFileSync(svid.key),
      checkServerIdentity: () => undefined,
    });
    session.on("error", () => resolve("session error"));
    const req = session.request({ ":path": "/" });
    let body = "";
    req.on("response", (headers) => {
      req.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      req.on("end", () => resolve(`${headers[":status"]} ${body}`));
    });
    req.on("error", () => resolve("stream error"));
    req.on("close", () => {
      resolve("closed without a response");
      session.close();
    });
    req.end();
  });
}

describe("the SVID guard on an HTTP/2 secure server", () => {
  it("hands an accepted client's SPIFFE ID to the request, over HTTP/2 and HTTP/1.1", async () => {
    expect(await h2Get(pki.client)).toBe(`200 2.0 ${AGENT_ID}`);
    const h1 = await new Promise<string>((resolve, reject) => {
      const req = httpsRequest(
        {
          host: "127.0.0.1",
          port,
          path: "/",
          ca,
          cert: readFileSync(pki.client.cert),
          key: readFileSync(pki.client.key),
          checkServerIdentity: () => undefined,
          agent: false,
        },
        (res) => {
          let body = "";
          res.on("data", (chunk: Buffer) => {
            body += chunk.toString();
          });
          res.on("end", () => resolve(`${res.statusCode} ${body}`));
        },
      );
      req.on("error", reject);
      req.end();
    });
    expect(h1).toBe(`200 1.1 ${AGENT_ID}`);
    expect(handled).toBe(2);
  });

  it.each([
    ["east's CA signing a hub.mesh ID", "forgery", "untrusted_chain"],
    ["an expired certificate", "expired", "expired"],
  ] as const)("never lets a request of %s reach the handler", async (_, name, reason) => {
    const before = { handled, refused: refused.length };
    expect(await h2Get(pki[name])).not.toMatch(/^200/);
    await waitFor(() => refused.length > before.refused, 5_000, "the refusal");
    expect(refused.at(-1)).toMatchObject({ ok: false, reason });
    expect(handled).toBe(before.handled);
  });
});
