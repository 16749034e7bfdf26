/**
 * The agent following a registrar over mutual TLS (issue 13, client side),
 * in process over real loopback sockets with certificates this test makes
 * (openssl): a change arrives over an mTLS stream; with a wrong
 * `--registrar-spiffe-id` it serves its last-known cache while `/readyz`
 * names the reason and the trust-failure metric counts it; its client
 * certificate rotates on disk (an ID the registrar denies replaced by one it
 * allows) and the next connection presents the new one.
 */
import { X509Certificate } from "node:crypto";
import { copyFile, mkdtemp, readFile, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Agent, createAgent } from "../../clients/agent/agent.js";
import type { ClientTlsConfig } from "../../services/process/client-tls-flags.js";
import { createRegistrar, type Registrar } from "../../services/registrar/registrar.js";
import { parseRegistrarFlags } from "../../services/registrar/registrar-flags.js";
import {
  createMemoryBackend,
  createMemoryStore,
} from "../../services/registrar/store/memory-store.js";
import type { Logger } from "../../services/runtime/logger.js";
import { execFileAsync } from "../interop/fixtures.js";
import { startAgentProcess, stopAllAgents } from "../support/agent-process.js";
import { captureLogger } from "../support/capture-logger.js";
import { registrarTlsFlags } from "../support/mtls-clients.js";
import { mainEntry } from "../support/process-entry.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { scrapeMetric } from "../support/scrape-metric.js";
import { issueSvid, type TestSvid } from "../support/spiffe-ca.js";
import { createSpiffePki, REGISTRAR_ID, type SpiffePki } from "../support/test-spiffe-pki.js";
import { waitFor } from "../support/wait.js";

const AGENT_MAIN = resolve(import.meta.dirname, "../../clients/agent/main.ts");

const INTRUDER_ID = "spiffe://east.mesh/ns/other/sa/intruder";

let dir: string;
let pki: SpiffePki;
let intruder: TestSvid;
const backend = createMemoryBackend();
let registrar: Registrar;
let registrarUrl: string;
const agents: Agent[] = [];

/** Starts the hub's registrar (mTLS, `--authorize` the agent's ID) over the shared backend on `port`. */
async function startRegistrar(port: number): Promise<Registrar> {
  const config = parseRegistrarFlags([
    ...["--cluster", "hub", "--listen", `127.0.0.1:${port}`],
    ...registrarTlsFlags(pki),
  ]);
  if (config === "help") throw new Error("unexpected --help");
  const started = createRegistrar({
    config,
    store: createMemoryStore({ origin: "hub", backend }),
    processMetrics: false,
  });
  registrarUrl = (await started.start()).url;
  await started.cache.whenSynced();
  return started;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-agent-mtls-"));
  pki = await createSpiffePki(dir);
  intruder = await issueSvid(pki.eastCa, dir, "intruder", { uris: [INTRUDER_ID] });
  registrar = await startRegistrar(0);
  await registrar.store.put(makeProjection("shop/cart"));
}, 60_000);

afterEach(async () => {
  await Promise.all(agents.splice(0).map((agent) => agent.stop()));
  await stopAllAgents();
});

afterAll(async () => {
  await registrar?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** The agent's TLS flags with `svid` and both bundles, the registrar's ID checked. */
function agentTls(svid: TestSvid, registrarSpiffeId = REGISTRAR_ID): ClientTlsConfig {
  return {
    certFile: svid.cert,
    keyFile: svid.key,
    bundleFiles: new Map([
      ["hub.mesh", pki.bundles.hubJwks],
      ["east.mesh", pki.bundles.eastPem],
    ]),
    registrarSpiffeId,
  };
}

/** Starts an agent for shop/cart and shop/pay with `tls` and a cache in `cacheDir`. */
async function startAgent(tls: ClientTlsConfig, cacheDir: string, logger?: Logger): Promise<Agent> {
  const agent = createAgent({
    ...(logger === undefined ? {} : { logger }),
    registrar: registrarUrl,
    cluster: "east",
    dependencies: ["shop/cart", "shop/pay"],
    cacheDir,
    listen: { host: "127.0.0.1", port: 0 },
    backoffInitialMs: 20,
    backoffMaxMs: 100,
    tls,
  });
  agents.push(agent);
  await agent.start();
  return agent;
}

async function get(agent: Agent, path: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`${agent.address?.url}${path}`);
  return { status: response.status, body: await response.text() };
}

const trustFailures = (agent: Agent, reason: string) =>
  scrapeMetric(
    agent.address?.url as string,
    `aether_config_agent_registrar_trust_failures_total{reason="${reason}"}`,
  );

describe("the agent over mutual TLS", () => {
  const cacheDir = () => join(dir, "cache");

  it("follows the registrar over mTLS: the first state, then a change as it happens", async () => {
    const agent = await startAgent(agentTls(pki.client), cacheDir());
    await agent.whenReady();
    await waitFor(async () => (await get(agent, "/routes")).body.includes("shop/cart"));
    await registrar.store.put(makeProjection("shop/pay"));
    await waitFor(async () => (await get(agent, "/routes")).body.includes("shop/pay"));
    expect(await get(agent, "/readyz")).toMatchObject({ status: 200 });
    expect(await trustFailures(agent, "unexpected_spiffe_id")).toBe(0);
    expect(await trustFailures(agent, "permission_denied")).toBe(0);
  });

  it("refuses a registrar with another SPIFFE ID: serves its cache, /readyz names the reason", async () => {
    const impostor = "spiffe://hub.mesh/ns/aether-system/sa/impostor";
    const agent = await startAgent(agentTls(pki.client, impostor), cacheDir());
    await waitFor(async () => (await get(agent, "/readyz")).status === 503, 5_000, "not ready");
    const readyz = await get(agent, "/readyz");
    expect(readyz.body).toContain("(unexpected_spiffe_id)");
    expect(readyz.body).toContain(REGISTRAR_ID);
    expect(readyz.body).toContain("serving the last-known route table");
    const routes = await get(agent, "/routes");
    expect(routes.status).toBe(200);
    expect(routes.body).toContain("shop/cart");
    expect(routes.body).toContain("shop/pay");
    expect(await trustFailures(agent, "unexpected_spiffe_id")).toBeGreaterThan(0);
  });

  it("rotates its client certificate: the next connection presents the new one", async () => {
    const cert = join(dir, "agent-cert.pem");
    const key = join(dir, "agent-key.pem");
    await copyFile(intruder.cert, cert);
    await copyFile(intruder.key, key);
    const log = captureLogger();
    const agent = await startAgent(
      { ...agentTls(pki.client), certFile: cert, keyFile: key },
      join(dir, "rotation-cache"),
      log.logger,
    );
    await waitFor(async () => (await get(agent, "/readyz")).body.includes("(permission_denied)"));
    expect((await get(agent, "/readyz")).body).toContain(INTRUDER_ID);
    expect(await trustFailures(agent, "permission_denied")).toBeGreaterThan(0);
    expect(agent.table).toBeUndefined();

    // The SVID helper's way: new files written aside, then renamed over the old ones.
    await copyFile(pki.client.cert, `${cert}.new`);
    await copyFile(pki.client.key, `${key}.new`);
    await rename(`${key}.new`, key);
    await rename(`${cert}.new`, cert);
    const rotated = "TLS material rotated: new connections to the registrar use it";
    await waitFor(() => log.withMessage(rotated).length > 0, 10_000, "the rotation");
    const serial = new X509Certificate(await readFile(pki.client.cert)).serialNumber;
    expect(log.withMessage(rotated)[0]?.serial).toBe(serial);
    // Denied with the old SVID, the agent connects again at once with the new one.
    await waitFor(async () => (await get(agent, "/readyz")).status === 200, 10_000, "ready");
    expect((await get(agent, "/routes")).body).toContain("shop/cart");
    expect(JSON.stringify(log.lines)).not.toContain("PRIVATE KEY");

    // A forced reconnect (the registrar restarts) presents the new SVID too: not denied again.
    const denied = await trustFailures(agent, "permission_denied");
    const reconnects = () =>
      scrapeMetric(agent.address?.url as string, "aether_config_stream_reconnects_total");
    const before = (await reconnects()) ?? 0;
    const port = Number(new URL(registrarUrl).port);
    await registrar.stop();
    registrar = await startRegistrar(port);
    await waitFor(async () => ((await reconnects()) ?? 0) > before, 10_000, "a reconnect");
    await registrar.store.put(
      makeProjection("shop/pay", { backend: "pay-v2", version: versionAt(2) }),
    );
    await waitFor(async () => (await get(agent, "/routes")).body.includes("pay-v2"), 10_000);
    expect((await get(agent, "/readyz")).status).toBe(200);
    expect(await trustFailures(agent, "permission_denied")).toBe(denied);
    // A registrar going away is no trust failure.
    expect(await trustFailures(agent, "refused_by_registrar")).toBe(0);
  }, 30_000);

  it("runs as aether-agent with the TLS flags: lists over mTLS, and a missing key file stops it", async () => {
    const flags = [
      ...["--registrar", registrarUrl, "--cluster", "east", "--deps", "shop/cart"],
      ...["--tls-cert-file", pki.client.cert, "--tls-key-file", pki.client.key],
      ...["--trust-domain-bundle", `hub.mesh=${pki.bundles.hubJwks}`],
      ...["--trust-domain-bundle", `east.mesh=${pki.bundles.eastPem}`],
      ...["--registrar-spiffe-id", REGISTRAR_ID],
    ];
    const agent = await startAgentProcess(flags);
    await agent.waitUntilReady(15_000);
    expect((await agent.routes()).map((entry) => entry.service)).toContain("shop/cart");
    const loaded = agent.logs.find((line) => line.msg === "TLS material loaded");
    expect(loaded?.spiffeId).toBe("spiffe://east.mesh/ns/aether-system/sa/aether-agent");
    expect(JSON.stringify(agent.logs)).not.toContain("PRIVATE KEY");
    expect(await agent.stop()).toBe(0);

    const missing = join(dir, "no-such-key.pem");
    const flagsWithoutKey = flags.map((flag) => (flag === pki.client.key ? missing : flag));
    const run = await execFileAsync(
      process.execPath,
      [...mainEntry(AGENT_MAIN), ...flagsWithoutKey, "--listen", "127.0.0.1:0"],
      { cwd: resolve(import.meta.dirname, "../.."), timeout: 20_000 },
    ).then(
      () => ({ code: 0, stderr: "" }),
      (error: { code?: number; stderr?: string }) => ({
        code: error.code,
        stderr: error.stderr ?? "",
      }),
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(missing);
    expect(run.stderr).toContain("cannot start");
  }, 30_000);
});
