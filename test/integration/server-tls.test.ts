/**
 * The registrar's HTTP server on its TLS port (`tls-port.ts`), with
 * certificates this test makes, over real loopback sockets: the caller's
 * SPIFFE ID reaches the RPCs; a client that caches TLS sessions is verified
 * at every connection (resumption is off); and the limits of the plaintext
 * port hold over TLS: the handshake within the header timeout, the
 * connection cap, HTTP/1.1 header size and timeout, PINGs on HTTP/2
 * sessions, and draining. Without bundles, TLS asks for no client
 * certificate.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { connect as h2Connect } from "node:http2";
import { Agent, request as httpsRequest } from "node:https";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TLSSocket, connect as tlsConnect } from "node:tls";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { PEER_SPIFFE_ID } from "../../services/registrar/server/peer-identity.js";
import type { ServerLimits } from "../../services/registrar/server/server-limits.js";
import type { TlsPortOptions } from "../../services/registrar/server/tls-port.js";
import { captureLogger } from "../support/capture-logger.js";
import { clientTlsOptions } from "../support/mtls-clients.js";
import type { TestSvid } from "../support/spiffe-ca.js";
import {
  runCommand,
  startTestHttpServer,
  type TestHttpServer,
} from "../support/test-http-server.js";
import { AGENT_ID, createSpiffePki, type SpiffePki } from "../support/test-spiffe-pki.js";
import { waitFor } from "../support/wait.js";

let dir: string;
let pki: SpiffePki;
const servers: TestHttpServer[] = [];
const cleanups: (() => void)[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-server-tls-"));
  pki = await createSpiffePki(dir);
}, 60_000);
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  await Promise.all(servers.splice(0).map((t) => t.server.close({ graceMs: 1_000 })));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** The TLS options of the test PKI: mutual (both bundles) unless `mutual` is false. */
function tlsOptions(mutual = true): TlsPortOptions {
  return {
    certFile: pki.server.cert,
    keyFile: pki.server.key,
    bundleFiles: mutual
      ? new Map([
          ["hub.mesh", pki.bundles.hubJwks],
          ["east.mesh", pki.bundles.eastPem],
        ])
      : new Map(),
    authorize: [],
  };
}

async function server(
  limits: Partial<ServerLimits> = {},
  extra: { interceptors?: Interceptor[]; mutual?: boolean } = {},
) {
  const log = captureLogger();
  const t = await startTestHttpServer({
    limits,
    logger: log.logger,
    tls: tlsOptions(extra.mutual),
    ...(extra.interceptors === undefined ? {} : { interceptors: extra.interceptors }),
  });
  servers.push(t);
  return { ...t, log };
}

/** `GET path` over HTTPS with `svid`; the status and body. */
function httpsGet(
  t: TestHttpServer,
  path: string,
  svid: TestSvid | undefined,
  options: { agent?: Agent; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: "127.0.0.1",
        port: t.port,
        path,
        headers: options.headers ?? {},
        agent: options.agent ?? false,
        ...clientTlsOptions(pki, svid),
      },
      (res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => {
          body += chunk.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** A TLS connection with the agent's SVID, open (and closed after the test). */
function openTls(port: number): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: "127.0.0.1", port, ...clientTlsOptions(pki, pki.client) });
    cleanups.push(() => socket.destroy());
    socket.once("secureConnect", () => resolve(socket));
    socket.once("error", reject);
  });
}

describe("the TLS port", () => {
  it("gives every call the caller's verified SPIFFE ID, over HTTP/2 and HTTP/1.1", async () => {
    const seen: (string | undefined)[] = [];
    const capture: Interceptor = (next) => (req) => {
      seen.push(req.contextValues.get(PEER_SPIFFE_ID)?.text);
      return next(req);
    };
    const t = await server({}, { interceptors: [capture] });
    for (const httpVersion of ["2", "1.1"] as const) {
      const transport = createConnectTransport({
        baseUrl: t.url,
        httpVersion,
        nodeOptions: clientTlsOptions(pki, pki.client),
      });
      await createClient(Health, transport).check({});
    }
    expect(seen).toEqual([AGENT_ID, AGENT_ID]);
  });

  it("verifies a client that caches TLS sessions at every connection (no resumption)", async () => {
    const t = await server();
    const agent = new Agent({ keepAlive: false });
    cleanups.push(() => agent.destroy());
    for (let i = 0; i < 3; i++) {
      expect(await httpsGet(t, "/healthz", pki.client, { agent })).toEqual({
        status: 200,
        body: "ok\n",
      });
    }
  });

  it("without bundles asks for no client certificate and gives calls no ID", async () => {
    const seen: unknown[] = [];
    const capture: Interceptor = (next) => (req) => {
      seen.push(req.contextValues.get(PEER_SPIFFE_ID));
      return next(req);
    };
    const t = await server({}, { interceptors: [capture], mutual: false });
    const transport = createConnectTransport({
      baseUrl: t.url,
      httpVersion: "2",
      nodeOptions: clientTlsOptions(pki),
    });
    await createClient(Health, transport).check({});
    expect(seen).toEqual([undefined]);
  });

  it("closes a connection whose handshake does not finish within the header timeout, and counts it", async () => {
    const t = await server({ headerTimeoutMs: 300 });
    const started = Date.now();
    await new Promise<void>((resolve) => {
      const socket = netConnect({ host: "127.0.0.1", port: t.port });
      socket.on("error", () => {});
      socket.on("close", () => resolve());
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    const metrics = await httpsGet(t, "/metrics", pki.client);
    expect(metrics.body).toContain(
      'aether_config_tls_handshake_failures_total{reason="handshake_timeout"} 1',
    );
  });

  it("counts a client that does not trust the server's certificate: curl's alert, Node's reset", async () => {
    const t = await server();
    const curl = await runCommand("curl", [
      ...["-sS", "--cacert", pki.eastRoot.cert, "--cert", pki.client.cert, "--key", pki.client.key],
      `${t.url}/healthz`,
    ]);
    expect(curl.code).not.toBe(0);
    const node = await new Promise<Error | undefined>((resolve) => {
      const socket = tlsConnect({
        host: "127.0.0.1",
        port: t.port,
        ...clientTlsOptions(pki, pki.client),
        ca: [readFileSync(pki.eastRoot.cert)],
      });
      socket.once("secureConnect", () => resolve(undefined));
      socket.once("error", resolve);
    });
    expect(node?.message).toMatch(/certificate/);
    const failures = (reason: string) =>
      `aether_config_tls_handshake_failures_total{reason="${reason}"} 1`;
    await waitFor(
      async () => {
        const metrics = (await httpsGet(t, "/metrics", pki.client)).body;
        return (
          metrics.includes(failures("client_alert")) &&
          metrics.includes(failures("connection_lost"))
        );
      },
      5_000,
      "curl's alert and Node's reset counted",
    );
  });

  it("closes connections beyond the cap at once, while admitted ones keep being served", async () => {
    const t = await server({ maxConnections: 2 });
    const first = await openTls(t.port);
    const second = await openTls(t.port);
    await expect(openTls(t.port)).rejects.toThrow();
    expect(first.destroyed || second.destroyed).toBe(false);
    second.destroy();
    await waitFor(
      async () => {
        const metrics = await httpsGet(t, "/metrics", pki.client).catch(() => undefined);
        return (
          metrics?.body.includes(
            'aether_config_server_refusals_total{reason="max_connections"} 1',
          ) ?? false
        );
      },
      5_000,
      "the refused connection counted",
    );
  });

  it("answers 431 to an HTTP/1.1 header block beyond --max-header-bytes", async () => {
    const t = await server({ maxHeaderBytes: 2048 });
    const reply = await httpsGet(t, "/healthz", pki.client, {
      headers: { "x-big": "a".repeat(4096) },
    });
    expect(reply.status).toBe(431);
    expect((await httpsGet(t, "/healthz", pki.client)).status).toBe(200);
  });

  it("answers 408 to HTTP/1.1 headers that never finish, and counts it", async () => {
    const t = await server({ headerTimeoutMs: 300 });
    const socket = await openTls(t.port);
    let reply = "";
    socket.on("data", (chunk: Buffer) => {
      reply += chunk.toString("latin1");
    });
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n");
    await closed;
    expect(reply).toMatch(/^HTTP\/1\.1 408 /);
    const metrics = await httpsGet(t, "/metrics", pki.client);
    expect(metrics.body).toContain(
      'aether_config_server_refusals_total{reason="header_timeout"} 1',
    );
  });

  it("PINGs HTTP/2 sessions", async () => {
    const t = await server({ pingIntervalMs: 150 });
    const session = h2Connect(t.url, clientTlsOptions(pki, pki.client));
    cleanups.push(() => session.destroy());
    const pinged = new Promise<void>((resolve) => session.once("ping", () => resolve()));
    await pinged;
    expect(session.destroyed).toBe(false);
  });

  it("drains: idle HTTP/1.1 keep-alive connections and HTTP/2 sessions close at once", async () => {
    const t = await server();
    const agent = new Agent({ keepAlive: true });
    cleanups.push(() => agent.destroy());
    expect((await httpsGet(t, "/healthz", pki.client, { agent })).status).toBe(200);
    const session = h2Connect(t.url, clientTlsOptions(pki, pki.client));
    cleanups.push(() => session.destroy());
    await new Promise<void>((resolve) => session.once("connect", () => resolve()));
    const started = Date.now();
    await t.server.close({ graceMs: 5_000 });
    expect(Date.now() - started).toBeLessThan(2_000);
    await waitFor(() => session.closed || session.destroyed, 2_000, "the session closed");
  });
});

describe("the TLS port's files", () => {
  it("refuses to listen when the key is not the certificate's, naming the problem", async () => {
    const log = captureLogger();
    const start = startTestHttpServer({
      logger: log.logger,
      tls: { ...tlsOptions(), keyFile: pki.client.key },
    });
    const error = (await start.then(
      () => undefined,
      (e: unknown) => e,
    )) as Error;
    expect(error.message).toMatch(/^TLS material refused: .*key/);
    expect(error.message).not.toMatch(/BEGIN|PRIVATE KEY/);
  });
});
