/**
 * e2e: HTTPFilters across clusters. (a) HTTPFilters attached to an exported
 * Service on the hub (class 1) reach both spokes' agents, in run order; (b)
 * an HTTPFilter used as a caller-side ExtensionRef by a local route of spoke
 * west (class 2) is resolved by west's agent, and neither east's agent nor
 * any registrar's listings nor the store ever hold it (a reference to a
 * filter west lacks is counted unresolved, and `aetherctl explain --agent`
 * shows that rule answering 500 and the other running the filter); (c) removing the hub's filters
 * removes them from every agent. Every process separate, over one real etcd;
 * run twice, plaintext and mutual TLS (a CA per cluster).
 */
import { mkdtemp, rm, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigView } from "../../gen/aether/registry/v1/config_service_pb.js";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { runAetherctlInProcess } from "../support/aetherctl-in-process.js";
import { type AgentProcess, startAgentProcess, stopAllAgents } from "../support/agent-process.js";
import {
  agentProjection,
  type ClusterRegistrar,
  configClient,
  EXAMPLES,
  effectiveProjection,
  startClusterRegistrar,
  type TempCopy,
  tempCopy,
} from "../support/e2e-cluster.js";
import { E2E_TRANSPORTS, useTransport } from "../support/e2e-transports.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("e2e-filters-");

/** The Lua source of west's caller-side filter: found nowhere but in west's agent. */
const MARKER = "-- west caller-side filter, never exported";

/** A second hub filter on shop/checkout: AuthN runs before checkout-headers (Default). */
const HUB_AUTHN = `apiVersion: mesh.aether.dev/v1alpha1
kind: HTTPFilter
metadata:
  name: zz-checkout-authn
  namespace: shop
  creationTimestamp: "2026-11-02T09:00:00Z"
spec:
  targetRefs:
    - {group: "", kind: Service, name: checkout}
  phase: AuthN
  lua:
    source: "-- hub authn"
`;

/** West's own objects: shop/cart, a local route of it running two caller-side filters. */
const WEST_LOCAL = `apiVersion: v1
kind: Service
metadata: {name: cart, namespace: shop}
spec:
  ports: [{name: http, port: 8080}]
---
apiVersion: mesh.aether.dev/v1alpha1
kind: HTTPFilter
metadata: {name: west-caller-auth, namespace: shop}
spec:
  phase: AuthN
  lua:
    source: "${MARKER}"
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: cart-west-filtered, namespace: shop}
spec:
  parentRefs: [{group: "", kind: Service, name: cart, port: 8080}]
  rules:
    - matches: [{path: {type: PathPrefix, value: /legacy}}]
      filters:
        - type: ExtensionRef
          extensionRef: {group: mesh.aether.dev, kind: HTTPFilter, name: west-absent}
      backendRefs: [{name: cart, port: 8080}]
    - filters:
        - type: ExtensionRef
          extensionRef: {group: mesh.aether.dev, kind: HTTPFilter, name: west-caller-auth}
      backendRefs: [{name: cart, port: 8080}]
`;

/** The names of a projection's Service-attached filters, in the order it lists them. */
function filterNames(projection: ServiceConfigProjection | undefined): string[] {
  return (projection?.httpFilters ?? []).map((f) => `${f.namespace}/${f.name}`);
}

/** Each rule's ExtensionRefs of a projection: `name -> lua source` or `name !reason`. */
function resolvedRefs(projection: ServiceConfigProjection | undefined): string[] {
  return (projection?.routes ?? []).flatMap((route) =>
    route.rules.flatMap((rule) =>
      rule.filters.flatMap(({ filter }) => {
        if (filter.case !== "extensionRef") return [];
        const { name, httpFilter, unresolvedReason } = filter.value;
        const lua = httpFilter?.extension.case === "lua" ? httpFilter.extension.value.source : "";
        return [httpFilter === undefined ? `${name} !${unresolvedReason}` : `${name} -> ${lua}`];
      }),
    ),
  );
}

describe.each(E2E_TRANSPORTS)("e2e over %s: HTTPFilters across clusters", (transport) => {
  const net = useTransport(transport, ["hub", "east", "west"]);
  let prefix: string;
  let mesh: TempCopy | undefined;
  let westLocal: string | undefined;
  const registrars: ClusterRegistrar[] = [];
  let hub: ClusterRegistrar;
  let east: AgentProcess;
  let west: AgentProcess;

  function agentOf(registrar: ClusterRegistrar, extra: string[] = []) {
    return startAgentProcess([
      ...registrar.agentFlags(registrar.cluster),
      ...["--cluster", registrar.cluster, "--control-cluster", "hub"],
      ...["--deps", "shop/checkout,shop/cart", ...extra],
    ]);
  }

  /** Waits until `holds` is true of east's agent, then of west's. */
  async function untilEveryAgent(what: string, holds: (agent: AgentProcess) => Promise<boolean>) {
    for (const [name, agent] of [
      ["east", east],
      ["west", west],
    ] as const) {
      await waitFor(() => holds(agent), 15_000, `${name}'s agent to ${what}`);
    }
  }

  beforeAll(async () => {
    prefix = shared.freshPrefix();
    mesh = await tempCopy(join(EXAMPLES, "mesh"));
    await writeFile(join(mesh.path, "shop/checkout-authn.yaml"), HUB_AUTHN);
    westLocal = await mkdtemp(join(tmpdir(), "aether-e2e-west-"));
    await writeFile(join(westLocal, "cart.yaml"), WEST_LOCAL);
    const common = { endpoint: shared.etcd.endpoint, prefix, controlCluster: "hub", tls: net.tls };
    registrars.push(
      ...(await Promise.all([
        startClusterRegistrar({ ...common, cluster: "hub", exportDir: mesh.path }),
        startClusterRegistrar({ ...common, cluster: "east" }),
        startClusterRegistrar({ ...common, cluster: "west" }),
      ])),
    );
    const [h, e, w] = registrars as [ClusterRegistrar, ClusterRegistrar, ClusterRegistrar];
    hub = h;
    [east, west] = await Promise.all([
      agentOf(e),
      agentOf(w, ["--local-source", `dir:${westLocal}`]),
    ]);
    await Promise.all([east.waitUntilReady(), west.waitUntilReady()]);
  }, 60_000);
  afterAll(async () => {
    await stopAllAgents();
    await stopAllRegistrars();
    await mesh?.remove();
    if (westLocal !== undefined) await rm(westLocal, { recursive: true, force: true });
  });

  it("(a) the hub's Service-attached filters reach both spokes' agents, in run order (AuthN before Default)", async () => {
    const want = ["shop/zz-checkout-authn", "shop/checkout-headers"];
    await waitFor(
      async () =>
        filterNames(await effectiveProjection(hub.url, "shop/checkout")).join() === want.join(),
      15_000,
      "the hub to export shop/checkout with its two filters, AuthN first",
    );
    await untilEveryAgent("hold shop/checkout's two filters", async (agent) => {
      return filterNames(await agentProjection(agent, "shop/checkout")).join() === want.join();
    });
  });

  it("(b) west's caller-side filter is resolved by west's agent only; a missing one is counted, not skipped", async () => {
    await waitFor(
      async () =>
        (await west.routes()).some((e) => e.service === "shop/cart" && e.source === "local"),
      15_000,
      "west's agent to apply its local shop/cart route",
    );
    expect(resolvedRefs(await agentProjection(west, "shop/cart"))).toEqual([
      "west-absent !not_found: no HTTPFilter shop/west-absent in this cluster",
      `west-caller-auth -> ${MARKER}`,
    ]);
    await west.waitForMetric(
      'aether_config_agent_unresolved_extension_refs{reason="not_found"}',
      (v) => v === 1,
    );
    const explain = (path: string) =>
      runAetherctlInProcess([
        ...["explain", "--agent", west.url, "--from-namespace", "web"],
        ...["GET", `http://cart.shop:8080${path}`],
      ]);
    const [legacy, other] = await Promise.all([explain("/legacy/x"), explain("/")]);
    expect(legacy.stdout).toMatch(/^decision: +unresolved-filter, status 500$/m);
    expect(legacy.stdout).toContain("west-absent unresolved (500): not_found:");
    expect(other.stdout).toContain(
      "mesh.aether.dev/HTTPFilter west-caller-auth = shop/west-caller-auth (AuthN, priority 0): lua (1 line)",
    );
    await waitFor(
      async () => (await east.routes()).length === 2,
      15_000,
      "east's agent to hold shop/checkout and shop/cart",
    );
    expect((await east.get("/routes")).body).not.toContain(MARKER);
    expect((await east.routes()).map((e) => `${e.service} ${e.source} ${e.origin}`)).toEqual([
      "shop/cart imported hub",
      "shop/checkout imported hub",
    ]);
    for (const registrar of registrars) {
      for (const view of [ConfigView.EFFECTIVE, ConfigView.ALL_ORIGINS]) {
        const listed = await configClient(registrar.url).listAllConfig({ view });
        expect(listed.projections.length).toBeGreaterThan(0);
        const text = JSON.stringify(listed.projections.map((p) => resolvedRefs(p)));
        expect(text, `${registrar.cluster} ${ConfigView[view]}`).not.toContain("west-caller-auth");
        for (const p of listed.projections) {
          expect(Buffer.from(toBinary(ServiceConfigProjectionSchema, p)).includes(MARKER)).toBe(
            false,
          );
        }
      }
    }
    const stored = await shared.raw.getAll().prefix(prefix).buffers();
    expect(Object.keys(stored).length).toBeGreaterThan(0);
    for (const [key, value] of Object.entries(stored)) {
      expect(value.includes(MARKER), key).toBe(false);
      expect(value.includes("west-caller-auth"), key).toBe(false);
    }
  });

  it("(c) removing the hub's filters removes them from every agent", async () => {
    const base = mesh?.path as string;
    await unlink(join(base, "shop/checkout-authn.yaml"));
    await unlink(join(base, "shop/checkout-filters.yaml"));
    await waitFor(
      async () => filterNames(await effectiveProjection(hub.url, "shop/checkout")).length === 0,
      15_000,
      "the hub to export shop/checkout without filters",
    );
    await untilEveryAgent("drop shop/checkout's filters", async (agent) => {
      const projection = await agentProjection(agent, "shop/checkout");
      return projection !== undefined && filterNames(projection).length === 0;
    });
    expect((await west.get("/routes")).body).toContain(MARKER);
  });
});
