/**
 * aetherctl and the mesh defaults (the `@mesh` record): `get @mesh`'s text,
 * `explain`'s lines for the defaults that applied (marked, with the record
 * they came from) and for a rule's own policies (unmarked), the agent's
 * `meshDefaults` read back as the `@mesh` entry (and written again as the
 * same document, as the dashboard passes it on), and `@mesh` accepted where
 * a record is named.
 */
import { describe, expect, it } from "vitest";
import { parseAetherctlFlags } from "../../clients/aetherctl/aetherctl-flags.js";
import { formatExplanation } from "../../clients/aetherctl/explain-format.js";
import { formatMeshRecord } from "../../clients/aetherctl/mesh-defaults-describe.js";
import type { SignatureReport } from "../../clients/aetherctl/signature-report.js";
import { findAgentRoute, parseAgentRoutes } from "../../services/common/agent-route-parse.js";
import { agentRoutesToJson } from "../../services/common/agent-route-write.js";
import { evaluate } from "../../services/common/evaluator.js";
import { mergeRouteTable, routeTableToJson } from "../../services/common/route-merge.js";
import { UsageError } from "../../services/process/usage-error.js";
import { explainTargetFromWeb } from "../support/explain-target.js";
import {
  type MeshConfigInit,
  meshRecord,
  ruleProjection,
  versionAt,
} from "../support/projections.js";

const NOW = Date.parse("2026-11-01T00:05:00Z");
const UNCHECKED: SignatureReport = { keyId: undefined, algorithm: undefined, state: "not_checked" };
const DEFAULTS: MeshConfigInit = {
  requestTimeout: { seconds: 15n },
  retry: { codes: [503], attempts: 2, backoff: { nanos: 25_000_000 } },
  retryBudget: { percent: 20, minRetryConcurrency: 3 },
  outlierDetection: {
    consecutive5xxErrors: 5,
    interval: { seconds: 10n },
    baseEjectionTime: { seconds: 30n },
    maxEjectionPercent: 50,
  },
};
const MESH = meshRecord(DEFAULTS);

describe("aetherctl get @mesh", () => {
  it("prints the record's origin, signature, version and every default in words", () => {
    expect(formatMeshRecord(MESH, NOW, UNCHECKED)).toBe(
      [
        "record:             @mesh (mesh-wide defaults, MeshConfig default)",
        "origin:             hub",
        "signed:             not checked (no --origin-keys)",
        "version:            2026-11-01T00:00:00.000000001Z (age 5m)",
        "request timeout:    15s",
        "retry:              on 503 and connection errors, at most 2 retries, backoff 25ms",
        "retry budget:       at most 20% of the requests in flight, at least 3 at once",
        "outlier detection:  eject an endpoint after 5 consecutive 5xx (or connection failures), checked every 10s, for 30s times its ejections, at most 50% of the endpoints",
        "",
      ].join("\n"),
    );
  });

  it("says when a MeshConfig sets nothing, or the record carries none", () => {
    expect(formatMeshRecord(meshRecord({}), NOW, UNCHECKED)).toMatch(
      /^defaults: +none set \(the data plane's own apply\)$/m,
    );
    const bare = { ...meshRecord({}), meshConfig: undefined };
    expect(formatMeshRecord(bare, NOW, UNCHECKED)).toMatch(
      /^record: +@mesh \(mesh-wide defaults: none\)$/m,
    );
  });
});

describe("aetherctl explain with mesh defaults", () => {
  const target = explainTargetFromWeb(["GET", "http://cart.shop:8080/"]);
  const explain = (rule: Parameters<typeof ruleProjection>[1][number]) => {
    const projection = ruleProjection(
      "shop/cart",
      [{ backends: [{ service: "shop/cart-v1", port: 8080, weight: 1 }], ...rule }],
      { port: 8080 },
    );
    const decision = evaluate({
      projections: [projection],
      request: target.request,
      mesh: { service: "shop/cart", port: 8080, callerNamespace: "web" },
      meshDefaults: MESH.meshConfig,
    });
    return formatExplanation({
      target,
      projection,
      view: "effective view",
      decision,
      random: "constant 0",
      meshDefaults: { record: MESH, view: "effective view" },
    });
  };

  it("a rule that sets nothing: the defaults' timeout and retry, marked, and the record they came from", () => {
    const text = explain({});
    expect(text).toMatch(
      /^retry: +on 503 and connection errors, at most 2 retries, backoff 25ms \(mesh default\)$/m,
    );
    expect(text).toMatch(/^request timeout: +15s \(mesh default\)$/m);
    expect(text).toMatch(
      /^mesh defaults: +MeshConfig default of origin hub, version 2026-11-01T00:00:00.000000001Z \(effective view\)$/m,
    );
    expect(text).toMatch(
      /^retry budget: +at most 20% of the requests in flight, at least 3 at once$/m,
    );
    expect(text).toMatch(/^outlier detection: +eject an endpoint after 5 consecutive 5xx/m);
  });

  it("a rule's own timeout and retry are printed as the rule's, unmarked", () => {
    const text = explain({ timeouts: { request: { seconds: 2n } }, retry: { attempts: 1 } });
    expect(text).toMatch(/^timeouts: +request 2s$/m);
    expect(text).toMatch(/^retry: +on connection errors, at most 1 retry, default backoff$/m);
    expect(text).not.toContain("(mesh default)");
    expect(text).not.toMatch(/^request timeout:/m);
    // The budget and outlier detection still come from the defaults, so the record is named.
    expect(text).toMatch(/^mesh defaults: +MeshConfig default of origin hub/m);
  });
});

describe("an agent's meshDefaults read back", () => {
  const table = mergeRouteTable({
    dependencies: ["shop/cart"],
    local: new Map(),
    imported: new Map([
      [
        "@mesh",
        {
          origin: "hub",
          service: "@mesh",
          projection: meshRecord(DEFAULTS, { version: versionAt(3) }),
        },
      ],
    ]),
    cluster: "west",
  });

  it("is written again as the agent's own document (agentRoutesToJson)", () => {
    const withService = mergeRouteTable({
      dependencies: ["shop/cart"],
      local: new Map([
        [
          "shop/cart",
          ruleProjection(
            "shop/cart",
            [{ backends: [{ service: "shop/cart-v1", port: 8080, weight: 1 }] }],
            { port: 8080 },
          ),
        ],
      ]),
      imported: new Map([
        [
          "@mesh",
          {
            origin: "hub",
            service: "@mesh",
            projection: meshRecord(DEFAULTS, { version: versionAt(3) }),
          },
        ],
      ]),
      cluster: "west",
    });
    const text = routeTableToJson(withService);
    expect(text).toContain('"source": "local"');
    expect(agentRoutesToJson(parseAgentRoutes(text))).toBe(text);
    expect(agentRoutesToJson(parseAgentRoutes(routeTableToJson(table)))).toBe(
      routeTableToJson(table),
    );
  });

  it("is the @mesh entry, its projection the mesh record", () => {
    const entry = findAgentRoute(parseAgentRoutes(routeTableToJson(table)), "@mesh");
    expect(entry).toMatchObject({
      service: "@mesh",
      source: "imported",
      origin: "hub",
      version: versionAt(3),
    });
    expect(entry?.projection).toMatchObject({
      service: "@mesh",
      originCluster: "hub",
      version: versionAt(3),
    });
    expect(entry?.projection.meshConfig).toEqual(MESH.meshConfig);
  });

  it.each([
    [{ meshDefaults: 1, services: [] }, "meshDefaults is not an object"],
    [
      { meshDefaults: { source: "x", origin: "hub", version: "v", config: {} }, services: [] },
      /meshDefaults.source/,
    ],
    [
      { meshDefaults: { source: "local", origin: "hub", version: "v" }, services: [] },
      "meshDefaults.config is not an object",
    ],
    [
      {
        meshDefaults: { source: "local", origin: "hub", version: "v", config: { retry: 3 } },
        services: [],
      },
      /meshDefaults.config: /,
    ],
  ])("rejects %j", (document, problem) => {
    expect(() => parseAgentRoutes(JSON.stringify(document))).toThrow(problem);
  });
});

describe("@mesh where a record is named", () => {
  it.each([
    [["get", "@mesh"], { name: "get", service: "@mesh" }],
    [["list", "@mesh", "shop/a"], { name: "list", services: ["@mesh", "shop/a"] }],
    [["watch", "@mesh"], { name: "watch", services: ["@mesh"] }],
  ])("%j", (argv, want) => {
    expect(parseAetherctlFlags(argv).command).toMatchObject(want);
  });

  it("no other name that is not namespace/name", () => {
    expect(() => parseAetherctlFlags(["get", "@meshes"])).toThrow(UsageError);
  });
});
