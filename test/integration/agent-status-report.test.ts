/**
 * Agents report what they applied and refused (`ReportAppliedConfig`), with
 * a real registrar (in-process, its `agentReports` read directly) and real
 * agents on loopback sockets, the registrar's report interval 1 s: an agent
 * that requires hub's signatures shows in sync (its dependency set and the
 * mesh record); after a hub edit it follows, and a projection signed with a
 * key it does not know shows it rejecting, with the reason; a restarted
 * registrar has it back within an interval or so, and within seconds when
 * the interval is an hour; an agent that stops is
 * forgotten after three intervals, not before. The registrar answers the
 * interval it is given, and a bad report INVALID_ARGUMENT naming the field
 * (both counted). Over mutual TLS, the table
 * keys agents by the caller's verified SPIFFE ID: two workloads reporting
 * the same agent_id are two agents.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Agent, type AgentOptions, createAgent } from "../../clients/agent/agent.js";
import type { ServedVersion } from "../../services/registrar/fleet/fleet-inputs.js";
import { createRegistrar, type Registrar } from "../../services/registrar/registrar.js";
import { parseRegistrarFlags } from "../../services/registrar/registrar-flags.js";
import {
  createMemoryBackend,
  createMemoryStore,
  type MemoryBackend,
} from "../../services/registrar/store/memory-store.js";
import { projectionKey } from "../../services/registrar/store/store-key.js";
import type { SigningKey } from "../../services/signing/signing-key.js";
import { readSample } from "../support/agent-process.js";
import { startTestRegistrar } from "../support/in-process-registrar.js";
import { registrarTlsFlags } from "../support/mtls-clients.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { newSigningKey, originKeysText, signedValue } from "../support/signing-keys.js";
import { issueSvid } from "../support/spiffe-ca.js";
import { AGENT_ID, createSpiffePki, REGISTRAR_ID } from "../support/test-spiffe-pki.js";
import { waitFor } from "../support/wait.js";

const PREFIX = "/aether/v1";
const hubKey = newSigningKey();
const strangerKey = newSigningKey();
const agents: Agent[] = [];
const registrars: Registrar[] = [];
let dir: string;
let keysFile: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-status-report-"));
  keysFile = join(dir, "origin-keys.json");
  await writeFile(keysFile, originKeysText({ hub: [hubKey] }));
});
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.stop()));
  await Promise.all(registrars.splice(0).map((r) => r.stop()));
});
afterAll(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** Writes hub's `service` at version `n`, signed with `key`, into the shared backend. */
function putSigned(backend: MemoryBackend, service: string, n: number, key: SigningKey): void {
  const projection = makeProjection(service, { origin: "hub", version: versionAt(n) });
  createMemoryStore({ origin: "hub", backend }).putRaw(
    projectionKey(PREFIX, "hub", service),
    signedValue(projection, "hub", key),
  );
}

/** Starts hub's registrar over `backend` on `port` (0: any), reports every second. */
async function startRegistrar(
  backend: MemoryBackend,
  port: number,
  extra: string[] = [],
): Promise<Registrar> {
  const config = parseRegistrarFlags([
    ...["--cluster", "hub", "--listen", `127.0.0.1:${port}`, "--agent-report-interval", "1s"],
    ...extra,
  ]);
  if (config === "help") throw new Error("unexpected --help");
  const registrar = createRegistrar({
    config,
    store: createMemoryStore({ origin: "hub", backend }),
    processMetrics: false,
  });
  registrars.push(registrar);
  await registrar.start();
  await registrar.cache.whenSynced();
  return registrar;
}

function startAgent(url: string, options: Partial<AgentOptions> = {}): Agent {
  const agent = createAgent({
    registrar: url,
    cluster: "spoke",
    dependencies: ["shop/a", "shop/b"],
    agentId: "node-1",
    originKeysFile: keysFile,
    requireSignatures: true,
    backoffInitialMs: 20,
    backoffMaxMs: 200,
    ...options,
  });
  agents.push(agent);
  return agent;
}

const hub = (n: number): ServedVersion => ({ origin: "hub", version: versionAt(n) });
/** A tally as `inSync/behind/rejecting/notReady`. */
const shown = (t: { inSync: number; behind: number; rejecting: number; notReady: number }) =>
  `${t.inSync}/${t.behind}/${t.rejecting}/${t.notReady}`;

describe("agents report what they applied", () => {
  it("in sync, then rejecting with the reason; back after a registrar restart; forgotten three intervals after it stops", async () => {
    const backend = createMemoryBackend();
    putSigned(backend, "shop/a", 1, hubKey);
    putSigned(backend, "shop/b", 1, hubKey);
    let registrar = await startRegistrar(backend, 0);
    const port = registrar.address?.port as number;
    const agent = startAgent(registrar.address?.url as string);
    await agent.start();
    let served: Record<string, ServedVersion | undefined> = { "shop/a": hub(1), "shop/b": hub(1) };
    const totals = () => shown(registrar.agentReports.totals((s) => served[s]));
    await waitFor(() => totals() === "1/0/0/0", 10_000, "the agent in sync");
    expect([...registrar.agentReports.reportedServices()].sort()).toEqual([
      "@mesh",
      "shop/a",
      "shop/b",
    ]);
    // No mesh record is served, and the agent applies none: they agree.
    expect(shown(registrar.agentReports.serviceAgents("@mesh", undefined).tally)).toBe("1/0/0/0");

    // A hub edit the agent takes, and one signed with a key it does not know.
    putSigned(backend, "shop/b", 2, hubKey);
    putSigned(backend, "shop/a", 2, strangerKey);
    served = { "shop/a": hub(2), "shop/b": hub(2) };
    await waitFor(() => totals() === "0/0/1/0", 10_000, "the agent rejecting shop/a");
    expect(shown(registrar.agentReports.serviceAgents("shop/b", hub(2)).tally)).toBe("1/0/0/0");
    const { tally, rejections } = registrar.agentReports.serviceAgents("shop/a", hub(2));
    expect(shown(tally)).toBe("0/0/1/0");
    expect(
      rejections.map((r) => [
        r.rejection.originCluster,
        r.rejection.version,
        r.rejection.reason,
        r.agents,
      ]),
    ).toEqual([["hub", versionAt(2), "unknown_key", 1]]);
    expect(rejections[0]?.rejection.message).not.toBe("");
    // Judged against an older served version, the agent that kept v1 of shop/a is in sync.
    expect(shown(registrar.agentReports.serviceAgents("shop/a", hub(1)).tally)).toBe("1/0/0/0");
    // At least the in-sync report and the rejecting one (others may have been coalesced).
    const agentMetrics = await agent.metrics.registry.metrics();
    expect(
      readSample(agentMetrics, 'aether_config_agent_status_reports_total{result="ok"}'),
    ).toBeGreaterThanOrEqual(2);
    expect(
      readSample(agentMetrics, 'aether_config_agent_status_reports_total{result="unimplemented"}'),
    ).toBe(0);

    // A restarted registrar learns everything again from the next report.
    await registrar.stop();
    registrars.splice(0);
    registrar = await startRegistrar(backend, port);
    expect(totals()).toBe("0/0/0/0");
    const restarted = Date.now();
    await waitFor(() => totals() === "0/0/1/0", 10_000, "the agent reported again");
    expect(Date.now() - restarted).toBeLessThan(5_000);
    const registrarMetrics = await registrar.metrics.registry.metrics();
    expect(readSample(registrarMetrics, "aether_config_reporting_agents")).toBe(1);
    expect(
      readSample(registrarMetrics, 'aether_config_agent_reports_total{result="accepted"}'),
    ).toBeGreaterThanOrEqual(1);

    // Stopped, the agent is kept for three intervals, then forgotten.
    await agent.stop();
    const stopped = Date.now();
    expect(totals()).toBe("0/0/1/0");
    await waitFor(() => totals() === "0/0/0/0", 10_000, "the agent forgotten");
    expect(Date.now() - stopped).toBeGreaterThanOrEqual(1_900);
    expect([...registrar.agentReports.reportedServices()]).toEqual([]);
  }, 60_000);

  it("reports again as soon as its stream to a restarted registrar is synced, an hour before its next heartbeat", async () => {
    const backend = createMemoryBackend();
    putSigned(backend, "shop/a", 1, hubKey);
    putSigned(backend, "shop/b", 1, hubKey);
    const hourly = ["--agent-report-interval", "1h"];
    let registrar = await startRegistrar(backend, 0, hourly);
    const port = registrar.address?.port as number;
    const agent = startAgent(registrar.address?.url as string);
    await agent.start();
    const served = { "shop/a": hub(1), "shop/b": hub(1) } as Record<string, ServedVersion>;
    const totals = () => shown(registrar.agentReports.totals((s) => served[s]));
    await waitFor(() => totals() === "1/0/0/0", 10_000, "the agent in sync");
    await registrar.stop();
    registrars.splice(0);
    registrar = await startRegistrar(backend, port, hourly);
    expect(totals()).toBe("0/0/0/0");
    // Nothing of the agent's changed: it reports on its stream's SYNCED (and the new
    // registrar's own status write moved the store's revision its report names).
    await waitFor(() => totals() === "1/0/0/0", 10_000, "the agent reported to the new registrar");
  }, 30_000);

  it("answers the report interval, and INVALID_ARGUMENT naming the field of a bad report, counted", async () => {
    const registrar = await startTestRegistrar([
      "--cluster",
      "hub",
      "--agent-report-interval",
      "2s",
    ]);
    try {
      const report = {
        agentId: "node-9",
        incarnation: "i",
        sequence: 1n,
        ready: true,
        services: [],
      };
      const answer = await registrar.client.reportAppliedConfig(report);
      expect(answer.reportInterval).toMatchObject({ seconds: 2n, nanos: 0 });
      const refused = await registrar.client
        .reportAppliedConfig({ ...report, services: [{ service: "shop/a", version: "soon" }] })
        .then(
          () => undefined,
          (error: unknown) => ConnectError.from(error),
        );
      expect(refused?.code).toBe(Code.InvalidArgument);
      expect(refused?.rawMessage).toMatch(
        /^services\[0\]\.version: "soon" is not an RFC 3339 timestamp/,
      );
      const metrics = await registrar.registrar.metrics.registry.metrics();
      expect(readSample(metrics, 'aether_config_agent_reports_total{result="accepted"}')).toBe(1);
      expect(readSample(metrics, 'aether_config_agent_reports_total{result="invalid"}')).toBe(1);
    } finally {
      await registrar.stop();
    }
  });

  it("over mutual TLS, keyed by the caller's verified SPIFFE ID", async () => {
    const pki = await createSpiffePki(join(dir, "pki"));
    const otherId = "spiffe://east.mesh/ns/aether-system/sa/other-agent";
    const other = await issueSvid(pki.eastCa, pki.dir, "other-agent", { uris: [otherId] });
    const backend = createMemoryBackend();
    putSigned(backend, "shop/a", 1, hubKey);
    putSigned(backend, "shop/b", 1, hubKey);
    const registrar = await startRegistrar(
      backend,
      0,
      registrarTlsFlags(pki, { authorize: [AGENT_ID, otherId] }),
    );
    const url = `https://127.0.0.1:${registrar.address?.port}`;
    const tls = (svid: { cert: string; key: string }) => ({
      certFile: svid.cert,
      keyFile: svid.key,
      bundleFiles: new Map([
        ["hub.mesh", pki.bundles.hubJwks],
        ["east.mesh", pki.bundles.eastPem],
      ]),
      registrarSpiffeId: REGISTRAR_ID,
    });
    // Two workloads with the same agent_id: two agents, each in sync.
    await startAgent(url, { tls: tls(pki.client) }).start();
    await startAgent(url, { tls: tls(other) }).start();
    const served = (service: string) => (service === "@mesh" ? undefined : hub(1));
    await waitFor(
      () => shown(registrar.agentReports.totals(served)) === "2/0/0/0",
      15_000,
      "two agents in sync",
    );
    expect(shown(registrar.agentReports.serviceAgents("shop/a", hub(1)).tally)).toBe("2/0/0/0");
  }, 60_000);
});
