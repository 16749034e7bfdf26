/**
 * The export controller and the projection limits: routes that would take a
 * projection over them are left out as `too_large` rejections (reported in
 * the status and counted, and still reported after an update that
 * re-projects other services), and thousands of rejected routes log a
 * handful of lines.
 */
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import type { KubeObject } from "../../services/common/kube-object.js";
import { projectionLimits } from "../../services/common/projection-limits.js";
import {
  createExportController,
  type ExportController,
} from "../../services/registrar/export/export-controller.js";
import { createExportMetrics } from "../../services/registrar/export/export-metrics.js";
import { createAlwaysLeader } from "../../services/registrar/export/leader-election.js";
import { createMemoryStore } from "../../services/registrar/store/memory-store.js";
import { DEFAULT_LINES_PER_INTERVAL } from "../../services/runtime/rate-limited-log.js";
import { captureLogger } from "../support/capture-logger.js";
import { createMemoryObjectSource } from "../support/memory-source.js";
import { waitFor } from "../support/wait.js";

const controllers: ExportController[] = [];
afterEach(async () => {
  await Promise.all(controllers.splice(0).map((c) => c.stop()));
});

const GW = "gateway.networking.k8s.io/v1";

/** A Service `shop/name` on port 80 and its ServiceExport. */
function exported(name: string): KubeObject[] {
  return [
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { namespace: "shop", name },
      spec: { ports: [{ port: 80 }] },
    },
    {
      apiVersion: "multicluster.x-k8s.io/v1alpha1",
      kind: "ServiceExport",
      metadata: { namespace: "shop", name },
    },
  ];
}

/** An HTTPRoute `name` to `shop/service`, matching `path` (a regex when `regex`). */
function httpRoute(name: string, service: string, path = "/", regex = false): KubeObject {
  return {
    apiVersion: GW,
    kind: "HTTPRoute",
    metadata: { namespace: "shop", name },
    spec: {
      parentRefs: [{ group: "", kind: "Service", name: service }],
      rules: [
        {
          matches: [{ path: { type: regex ? "RegularExpression" : "PathPrefix", value: path } }],
          backendRefs: [{ name: service, port: 80 }],
        },
      ],
    },
  } as KubeObject;
}

const routesTo = (service: string, count: number) =>
  Array.from({ length: count }, (_, i) => httpRoute(`r-${String(i).padStart(2, "0")}`, service));

describe("export controller projection limits", () => {
  it("leaves out the routes over the limits as too_large, reports and counts them", async () => {
    const store = createMemoryStore({ origin: "hub" });
    const registry = new Registry();
    const objects = [...exported("web"), ...routesTo("web", 10)];
    const source = createMemoryObjectSource(objects);
    const c = createExportController({
      source,
      store,
      origin: "hub",
      controlCluster: undefined,
      leadership: createAlwaysLeader(),
      debounceMs: 5,
      metrics: createExportMetrics(registry),
      limits: projectionLimits({ maxRoutes: 3 }),
    });
    controllers.push(c);
    c.start();
    await waitFor(() => c.status().services === 1, 2_000, "the export");
    await c.idle();

    const stored = (await store.list({ origin: "hub" })).entries[0]?.projection;
    expect(stored?.routes.map((r) => r.name)).toEqual(["r-00", "r-01", "r-02"]);
    expect(c.status().rejections.map((r) => [r.route.name, r.reason])).toEqual(
      ["r-03", "r-04", "r-05", "r-06", "r-07", "r-08", "r-09"].map((n) => [n, "too_large"]),
    );
    const metrics = await registry.metrics();
    expect(metrics).toMatch(/^aether_config_export_rejections_total\{reason="too_large"\} 7$/m);
    expect(metrics).toMatch(/^aether_config_export_rejections_total\{reason="invalid_regex"\} 0$/m);

    // An update that re-projects another service only still reports web's.
    const reconciles = c.status().reconciles;
    source.set([...objects, ...exported("cart")]);
    await waitFor(() => c.status().services === 2 && c.status().reconciles > reconciles);
    expect(c.status().rejections).toHaveLength(7);

    // Within the limits again: no rejection, every route exported.
    source.set([...exported("web"), ...exported("cart"), ...routesTo("web", 3)]);
    await waitFor(() => c.status().rejections.length === 0, 2_000, "the rejections to clear");
    await c.idle();
    const web = (await store.list({ origin: "hub" })).entries.find((e) => e.service === "shop/web");
    expect(web?.projection.routes).toHaveLength(3);
  });

  it("logs a handful of lines for thousands of rejected routes", async () => {
    const store = createMemoryStore({ origin: "hub" });
    const log = captureLogger();
    const bad = Array.from({ length: 2_000 }, (_, i) => httpRoute(`bad-${i}`, "web", "(", true));
    const c = createExportController({
      source: createMemoryObjectSource([...exported("web"), ...bad]),
      store,
      origin: "hub",
      controlCluster: undefined,
      leadership: createAlwaysLeader(),
      debounceMs: 5,
      logger: log.logger,
    });
    controllers.push(c);
    c.start();
    await waitFor(() => c.status().services === 1, 5_000, "the export");
    await c.idle();
    expect(c.status().rejections).toHaveLength(2_000);
    expect(log.withMessage("route rejected; it is not exported")).toHaveLength(
      DEFAULT_LINES_PER_INTERVAL,
    );
    await c.stop();
    const summary = log.lines.find((line) => line.kind === "route-rejection");
    expect(summary?.suppressed).toBe(2_000 - DEFAULT_LINES_PER_INTERVAL);
  });
});
