/**
 * The connection limits of the registrar's port, on a real server over real
 * loopback sockets: beyond the connection cap a new connection is closed at
 * once (counted, and logged at most once per interval) while the admitted
 * ones keep being served; and a connection that sends nothing, or HTTP/1.1
 * headers that never finish, is closed after the header timeout.
 */
import { Agent, get } from "node:http";
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { ServerLimits } from "../../services/registrar/server/server-limits.js";
import { captureLogger } from "../support/capture-logger.js";
import { openRawH2, type RawH2Connection } from "../support/raw-h2.js";
import { scrapeMetric } from "../support/scrape-metric.js";
import {
  sendRawBytes,
  startTestHttpServer,
  type TestHttpServer,
} from "../support/test-http-server.js";
import { waitFor } from "../support/wait.js";

const servers: TestHttpServer[] = [];
const raws: RawH2Connection[] = [];
const agents: Agent[] = [];

afterEach(async () => {
  for (const raw of raws.splice(0)) raw.destroy();
  for (const agent of agents.splice(0)) agent.destroy();
  await Promise.all(servers.splice(0).map((t) => t.server.close({ graceMs: 1_000 })));
});

async function server(limits: Partial<ServerLimits>, log = captureLogger()) {
  const t = await startTestHttpServer({ limits, logger: log.logger });
  servers.push(t);
  return t;
}

/** GET `path` over `agent`; resolves with the status and whether the socket was reused. */
function getVia(agent: Agent, url: string): Promise<{ status: number; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const request = get(url, { agent }, (response) => {
      response.resume();
      response.on("end", () =>
        resolve({ status: response.statusCode ?? 0, reused: request.reusedSocket }),
      );
    });
    request.on("error", reject);
  });
}

/** Connects and resolves with what the server sent before it closed the connection. */
function connectAndWaitForClose(port: number): Promise<{ bytes: number; ms: number }> {
  return new Promise((resolve) => {
    const started = Date.now();
    let bytes = 0;
    const socket = connect({ host: "127.0.0.1", port });
    socket.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
    });
    socket.on("error", () => {});
    socket.on("close", () => resolve({ bytes, ms: Date.now() - started }));
  });
}

const refusals = (url: string, reason: string) =>
  scrapeMetric(url, `aether_config_server_refusals_total{reason="${reason}"}`);

/** Reads a sample from `/metrics` over `agent` (so over its kept-alive connection). */
function metricVia(agent: Agent, url: string, sample: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    get(`${url}/metrics`, { agent }, (response) => {
      let text = "";
      response.on("data", (chunk: Buffer) => {
        text += chunk.toString("utf8");
      });
      response.on("end", () => {
        const line = text.split("\n").find((l) => l.startsWith(`${sample} `));
        resolve(line === undefined ? undefined : Number(line.slice(sample.length + 1)));
      });
    }).on("error", reject);
  });
}

describe("the connection cap", () => {
  it("closes new connections at once beyond it, while admitted ones keep being served", async () => {
    const log = captureLogger();
    const t = await server({ maxConnections: 4 }, log);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent);
    const connections = () => metricVia(agent, t.url, "aether_config_server_connections");
    expect(await getVia(agent, `${t.url}/healthz`)).toEqual({ status: 200, reused: false });
    for (let i = 0; i < 3; i++) raws.push(await openRawH2(t.port));
    await waitFor(async () => (await connections()) === 4, 5_000, "four open connections");

    // A fifth, a sixth and a seventh are closed before anything is read or sent.
    for (let i = 0; i < 3; i++) expect((await connectAndWaitForClose(t.port)).bytes).toBe(0);
    expect(await getVia(agent, `${t.url}/healthz`)).toEqual({ status: 200, reused: true });
    expect(raws.every((raw) => !raw.closed)).toBe(true);
    expect(
      await metricVia(
        agent,
        t.url,
        'aether_config_server_refusals_total{reason="max_connections"}',
      ),
    ).toBe(3);
    const lines = log.lines.filter((line) => line.reason === "max_connections");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, maxConnections: 4 });

    // One goes: a new connection is admitted again.
    raws.shift()?.destroy();
    await waitFor(async () => (await connections()) === 3, 5_000, "three open connections");
    const fresh = new Agent();
    agents.push(fresh);
    expect(await getVia(fresh, `${t.url}/healthz`)).toEqual({ status: 200, reused: false });
  });
});

describe("the header timeout", () => {
  it("closes a connection that sends nothing", async () => {
    const t = await server({ headerTimeoutMs: 300 });
    const closed = await connectAndWaitForClose(t.port);
    expect(closed.bytes).toBe(0);
    expect(closed.ms).toBeGreaterThanOrEqual(290);
  });

  it("answers 408 to HTTP/1.1 headers that never finish, and closes the connection", async () => {
    const t = await server({ headerTimeoutMs: 300 });
    const started = Date.now();
    const reply = await sendRawBytes(t.port, "GET /healthz HTTP/1.1\r\nHost: x\r\n", {
      end: false,
      timeoutMs: 5_000,
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(reply.toString("latin1")).toMatch(/^HTTP\/1\.1 408 /);
    expect(await refusals(t.url, "header_timeout")).toBe(1);
  });

  it("lets a keep-alive connection that finished its headers in time serve its request", async () => {
    const t = await server({ headerTimeoutMs: 300 });
    const reply = await sendRawBytes(
      t.port,
      "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    expect(reply.toString("latin1")).toMatch(/^HTTP\/1\.1 200 /);
    expect(await refusals(t.url, "header_timeout")).toBe(0);
  });
});
