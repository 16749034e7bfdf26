/**
 * e2e 7: bad input end to end. The hub exports a copy of examples/mesh plus
 * an invalid route (a bad regular expression) and a YAML file that does not
 * parse; a corrupt value sits in etcd; the registrars get malformed API
 * requests and a watcher that disconnects mid-stream. Every good service
 * keeps flowing to the agent, every bad input is reported (log line,
 * metric, `aetherctl status`), and no process crashes.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAetherctl } from "../../clients/aetherctl/aetherctl.js";
import { projectionKey } from "../../services/registrar/store/store-key.js";
import { type AgentProcess, startAgentProcess, stopAllAgents } from "../support/agent-process.js";
import {
  agentProjection,
  configClient,
  EXAMPLES,
  healthz,
  startClusterRegistrar,
  type TempCopy,
  tempCopy,
} from "../support/e2e-cluster.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { scrapeMetric, setCanaryWeights } from "../support/export-store.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("e2e7-");
const GOOD = ["identity/users", "payments/ledger", "shop/cart", "shop/checkout"];

const BAD_ROUTE = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: users-bad-regex
  namespace: identity
spec:
  parentRefs:
    - group: ""
      kind: Service
      name: users
      port: 8080
  rules:
    - matches:
        - path:
            type: RegularExpression
            value: /users/([0-9+
      backendRefs:
        - name: users
          port: 8080
`;

let mesh: TempCopy | undefined;
let hub: RegistrarProcess;
let spoke: RegistrarProcess;
let agent: AgentProcess;

beforeAll(async () => {
  const prefix = shared.freshPrefix();
  mesh = await tempCopy(join(EXAMPLES, "mesh"));
  await writeFile(join(mesh.path, "identity/users-bad-regex.yaml"), BAD_ROUTE);
  await writeFile(
    join(mesh.path, "shop/broken.yaml"),
    "kind: Service\nmetadata: [unclosed\n  : :\n",
  );
  await shared.raw
    .put(projectionKey(prefix, "hub", "shop/corrupt"))
    .value(Buffer.from([0xff, 0xff, 0xff, 0x07, 0x01]));
  const common = { endpoint: shared.etcd.endpoint, prefix, controlCluster: "hub" };
  [hub, spoke] = await Promise.all([
    startClusterRegistrar({ ...common, cluster: "hub", exportDir: mesh.path }),
    startClusterRegistrar({ ...common, cluster: "east" }),
  ]);
  agent = await startAgentProcess([
    "--registrar",
    spoke.url,
    "--cluster",
    "east",
    "--control-cluster",
    "hub",
    "--deps",
    [...GOOD, "shop/corrupt"].join(","),
  ]);
  await agent.waitUntilReady();
  await waitFor(
    async () => (await agent.routes()).length === GOOD.length,
    15_000,
    "the agent to hold the four good services",
  );
}, 60_000);
afterAll(async () => {
  await stopAllAgents();
  await stopAllRegistrars();
  await mesh?.remove();
});

describe("e2e 7: bad input end to end", () => {
  it("the good services reach the agent despite an invalid route, an unparsable YAML file and a corrupt etcd value; users keeps only its valid route", async () => {
    expect((await agent.routes()).map((e) => `${e.service} ${e.origin}`)).toEqual(
      GOOD.map((s) => `${s} hub`),
    );
    const users = await agentProjection(agent, "identity/users");
    expect(users?.routes.map((r) => r.name)).toEqual(["users"]);
  });

  it("the invalid route and the unparsable file are reported by the hub (GetConfigStatus, log line) and by `aetherctl status --fail-on-rejections` (exit 3)", async () => {
    const status = await configClient(hub.url).getConfigStatus({});
    expect(
      status.export?.routeRejections.map((r) => `${r.namespace}/${r.name} ${r.reason}`),
    ).toEqual(["identity/users-bad-regex invalid_regex"]);
    expect(status.export?.sourceProblems.map((p) => p.where).join()).toContain("broken.yaml");
    await hub.waitForLog((l) => l.msg === "route rejected; it is not exported");
    let out = "";
    const code = await runAetherctl(["--registrar", hub.url, "status", "--fail-on-rejections"], {
      stdout: (t) => {
        out += t;
      },
      stderr: () => {},
      env: {},
      isTty: false,
    });
    expect(code).toBe(3);
    expect(out).toContain("users-bad-regex");
    expect(out).toContain("broken.yaml");
  });

  it("the corrupt etcd value is skipped, logged and counted (aether_config_store_decode_errors_total) by both registrars and never reaches the agent", async () => {
    for (const registrar of [hub, spoke]) {
      await registrar.waitForLog((l) => l.msg === "skipping a store value that does not decode");
      expect(
        await scrapeMetric(registrar.url, "aether_config_store_decode_errors_total"),
      ).toBeGreaterThanOrEqual(1);
    }
    expect((await agent.routes()).some((e) => e.service === "shop/corrupt")).toBe(false);
  });

  it("malformed API requests get a 4xx and a watcher that disconnects mid-stream is dropped; a hub edit still reaches the agent and every process answers /healthz", async () => {
    const method = `${spoke.url}/aether.registry.v1.ConfigService/ListAllConfig`;
    const garbage = [
      { "content-type": "application/proto", body: new Uint8Array([0xff, 0xff, 0xff, 0x07]) },
      { "content-type": "application/json", body: "{not json" },
      { "content-type": "application/json", body: '{"view": "NO_SUCH_VIEW", "pageSize": "x"}' },
      { "content-type": "text/plain", body: "hello" },
    ];
    for (const { body, ...headers } of garbage) {
      const response = await fetch(method, { method: "POST", headers, body });
      await response.arrayBuffer();
      expect(response.status, headers["content-type"]).toBeGreaterThanOrEqual(400);
      expect(response.status, headers["content-type"]).toBeLessThan(500);
    }

    const abort = new AbortController();
    const stream = configClient(spoke.url).watchConfig({}, { signal: abort.signal });
    const iterator = stream[Symbol.asyncIterator]();
    expect((await iterator.next()).done).toBe(false);
    abort.abort();
    // Messages already received may still be yielded; then the stream ends in an abort error.
    const ended = async (): Promise<string> => {
      try {
        for (;;) if ((await iterator.next()).done) return "done";
      } catch {
        return "aborted";
      }
    };
    expect(await ended()).toBe("aborted");

    await setCanaryWeights((mesh as TempCopy).path, 70, 30);
    await waitFor(
      async () =>
        (await agentProjection(agent, "shop/checkout"))?.routes[0]?.rules[1]?.backends
          .map((b) => b.weight)
          .join() === "70,30",
      10_000,
      "the hub's edit at the agent",
    );
    for (const url of [hub.url, spoke.url, agent.url]) expect(await healthz(url), url).toBe(true);
  });
});
