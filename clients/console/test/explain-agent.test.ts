/**
 * The Explain view with an agent's route table: the view a form chooses and
 * its title, the dashboard's `/agents` list read, which entry of the table
 * decided the destination (local override or imported, as `aetherctl
 * explain --agent` says it), and the decision over the table's projections,
 * its `@mesh` defaults included.
 */
import { describe, expect, it } from "vitest";
import { parseAgentRoutes } from "../../../services/common/agent-route-parse.js";
import { explainInView } from "../../../services/common/explain-decide.js";
import {
  agentProjections,
  agentRouteLine,
  agentsFromJson,
  viewChoiceOf,
  viewTitle,
} from "../src/views/explain/explain-agent.js";
import { EMPTY_FORM, formTarget } from "../src/views/explain/explain-model.js";

/** A route of `service` on port 8080 to `backend` (proto JSON). */
function route(service: string, backend: string) {
  return {
    service,
    routes: [
      {
        kind: "ROUTE_KIND_HTTP",
        namespace: "shop",
        name: "r",
        role: "ROUTE_ROLE_PRODUCER",
        parentRefs: [{ service, port: 8080 }],
        rules: [{ backends: [{ service: backend, port: 8080, weight: 1 }] }],
      },
    ],
  };
}

/** West's table: its local override of shop/checkout, the hub's cart and mesh defaults. */
const WEST = parseAgentRoutes(
  JSON.stringify({
    meshDefaults: {
      source: "imported",
      origin: "hub",
      version: "2026-12-01T00:00:00Z",
      config: { requestTimeout: "15s" },
    },
    services: [
      {
        service: "shop/cart",
        source: "imported",
        origin: "hub",
        version: "2026-12-01T00:00:01Z",
        projection: route("shop/cart", "shop/cart-v2"),
      },
      {
        service: "shop/checkout",
        source: "local",
        origin: "west",
        version: "sha256:0123456789abcdef",
        projection: route("shop/checkout", "shop/checkout-v1"),
      },
    ],
  }),
);

describe("the view a form chooses", () => {
  it.each([
    [{ origin: "", agent: "" }, { kind: "effective" }, "effective view"],
    [
      { origin: " hub ", agent: "" },
      { kind: "origin", cluster: "hub" },
      "projections of origin hub",
    ],
    [{ origin: "", agent: "west" }, { kind: "agent", name: "west" }, "route table of agent west"],
  ])("%j is %j, titled %s", (fields, choice, title) => {
    expect(viewChoiceOf(fields)).toEqual(choice);
    expect(viewTitle(viewChoiceOf(fields))).toBe(title);
  });
});

describe("the dashboard's agents", () => {
  it("reads GET /agents' names", () => {
    expect(agentsFromJson('{"agents": ["east", "west"]}')).toEqual(["east", "west"]);
    expect(agentsFromJson('{"agents": []}')).toEqual([]);
  });

  it.each(['{"agents": [1]}', "{}", "null", "[]"])("refuses %s", (text) => {
    expect(() => agentsFromJson(text)).toThrow('no "agents" array of names');
  });
});

describe("explaining as an agent", () => {
  it("says which entry decided the destination, as aetherctl explain --agent", () => {
    expect(agentRouteLine("west", WEST, "shop/checkout")).toBe(
      "Agent west's entry for shop/checkout: local, from cluster west (version sha256:0123456789abcdef): the cluster's local override.",
    );
    expect(agentRouteLine("west", WEST, "shop/cart")).toBe(
      "Agent west's entry for shop/cart: imported, from origin hub version 2026-12-01T00:00:01Z.",
    );
    expect(agentRouteLine("west", WEST, "shop/pay")).toMatch(
      /^Agent west does not route shop\/pay \(not in its dependency set, or no config for it\): requests go to the service itself\.$/,
    );
  });

  it("decides over the table's projections: the local override's backend and the @mesh defaults", () => {
    const request = formTarget({
      ...EMPTY_FORM,
      url: "http://checkout.shop:8080/",
      from: "shop",
      agent: "west",
    });
    if (!request.ok) throw new Error(request.error);
    const projections = agentProjections(WEST);
    expect(projections.map((p) => p.service)).toEqual(["@mesh", "shop/cart", "shop/checkout"]);
    const { decision, meshRecord } = explainInView(request.target, projections, request.random());
    expect(decision.outcome).toBe("forwarded");
    expect(decision.backend).toMatchObject({ service: "shop/checkout-v1", port: 8080 });
    expect(meshRecord?.originCluster).toBe("hub");
    expect(decision.requestTimeout).toMatchObject({ ms: 15_000 });
  });
});
