import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { FLEET_CONDITION_TYPE, type FleetSummary } from "../../services/common/fleet-condition.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { projectServices } from "../../services/common/projector.js";
import { planStatusPatches, type StatusInputs } from "../../services/common/status-plan.js";
import {
  createStatusWriter,
  STATUS_WRITE_CONCURRENCY,
} from "../../services/registrar/export/status-writer.js";
import { KubeApiError } from "../../services/sources/kube-list.js";
import { captureLogger } from "../support/capture-logger.js";
import { kubeService, serviceExport } from "../support/kube-objects.js";
import { waitFor } from "../support/wait.js";

const NS = "shop";

/** The inputs of an export run over one route to shop/cart at `resourceVersion`. */
function inputs(resourceVersion: string, backend = "cart"): StatusInputs {
  const objects: KubeObject[] = [
    kubeService("cart", NS, [{ name: "http", port: 8080 }]),
    serviceExport("cart", NS),
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: { namespace: NS, name: "r", resourceVersion, generation: 1 },
      spec: {
        parentRefs: [{ group: "", kind: "Service", name: "cart" }],
        rules: [{ backendRefs: [{ name: backend, port: 8080 }] }],
      },
    },
  ];
  const output = projectServices(objects);
  return {
    objects,
    services: new Set(output.projections.map((p) => p.service)),
    rejections: output.rejections,
    warnings: output.warnings,
  };
}

/** A patcher that records its calls and answers with `answer` (by call number). */
function recordingPatcher(answer: (call: number) => Promise<void> = () => Promise.resolve()) {
  const calls: { path: string; body: unknown }[] = [];
  return {
    calls,
    patch: (path: string, body: unknown) => {
      calls.push({ path, body });
      return answer(calls.length);
    },
  };
}

async function sample(registry: Registry, result: string): Promise<number | undefined> {
  const metric = await registry.getSingleMetric("aether_config_export_status_writes_total")?.get();
  return metric?.values.find((v) => v.labels.result === result)?.value;
}

describe("status writer", () => {
  it("does not patch again what it patched from the same resourceVersion", async () => {
    const { calls, patch } = recordingPatcher();
    const writer = createStatusWriter({ patch, logger: captureLogger().logger });
    writer.update(inputs("7"));
    await waitFor(() => calls.length === 1);
    writer.update(inputs("7")); // the watch event of the write is not in yet
    writer.update(inputs("7", "gone")); // a new status from the same version: written
    await waitFor(() => calls.length === 2);
    await writer.stop();
    expect(calls.map((c) => c.path)).toEqual([
      "/apis/gateway.networking.k8s.io/v1/namespaces/shop/httproutes/r/status",
      "/apis/gateway.networking.k8s.io/v1/namespaces/shop/httproutes/r/status",
    ]);
  });

  it("coalesces: while a write is in flight, only the latest inputs are written next", async () => {
    let release: () => void = () => {};
    const first = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { calls, patch } = recordingPatcher((call) => (call === 1 ? first : Promise.resolve()));
    const writer = createStatusWriter({ patch, logger: captureLogger().logger });
    writer.update(inputs("1"));
    await waitFor(() => calls.length === 1);
    for (const rv of ["2", "3", "4"]) writer.update(inputs(rv, rv === "4" ? "gone" : "cart"));
    release();
    await waitFor(() => calls.length === 2);
    await writer.stop();
    const sent = calls[1]?.body as { metadata: { resourceVersion: string } };
    expect(sent.metadata.resourceVersion).toBe("4");
    expect(calls).toHaveLength(2);
  });

  it("counts and logs a failed write, and plans it again after a backoff", async () => {
    const registry = new Registry();
    const log = captureLogger();
    const { calls, patch } = recordingPatcher((call) =>
      call === 1
        ? Promise.reject(new KubeApiError("PATCH …: HTTP 409: modified", 409, "Conflict"))
        : call === 2
          ? Promise.reject(new KubeApiError("PATCH …: connect ECONNREFUSED"))
          : Promise.resolve(),
    );
    const writer = createStatusWriter({ patch, logger: log.logger, registry, retryInitialMs: 5 });
    writer.update(inputs("7"));
    await waitFor(() => calls.length === 3, 5_000, "two retries");
    await writer.stop();
    expect(await sample(registry, "conflict")).toBe(1);
    expect(await sample(registry, "failed")).toBe(1);
    expect(await sample(registry, "written")).toBe(1);
    const warnings = log.withMessage("status write failed; planned again later");
    expect(warnings.map((w) => [w.kind, w.name])).toEqual([
      ["HTTPRoute", "r"],
      ["HTTPRoute", "r"],
    ]);
  });

  it("stops a run's writes at a failure not about one object (403): a few PATCHes, not one per object", async () => {
    const many = inputs("7");
    const routes = Array.from({ length: 20 }, (_, i) => ({
      ...(many.objects[2] as KubeObject),
      metadata: { namespace: NS, name: `r${i}`, resourceVersion: "7", generation: 1 },
    }));
    const log = captureLogger();
    const { calls, patch } = recordingPatcher(() =>
      Promise.reject(new KubeApiError("PATCH …: HTTP 403: forbidden", 403, "Forbidden")),
    );
    const writer = createStatusWriter({ patch, logger: log.logger, retryInitialMs: 60_000 });
    writer.update({ ...many, objects: [...many.objects.slice(0, 2), ...routes] });
    await waitFor(() => log.withMessage("status run").length === 1);
    await writer.stop();
    expect(log.withMessage("status run")[0]).toMatchObject({ planned: 20, due: 20 });
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.length).toBeLessThanOrEqual(STATUS_WRITE_CONCURRENCY);
  });

  it("skips an object it found in sync until its resourceVersion moves or a pause", async () => {
    const { calls, patch } = recordingPatcher();
    const log = captureLogger();
    const writer = createStatusWriter({ patch, logger: log.logger });
    const synced = inputs("7");
    const route = synced.objects[2] as KubeObject & { status?: unknown };
    const [planned] = planStatusPatches(synced, "2026-12-03T10:00:00Z");
    route.status = planned?.body.status;
    writer.update(synced);
    await waitFor(() => log.withMessage("status run").length === 1);
    // The same resourceVersion with a status this writer would fix: not looked at.
    const emptied = {
      ...synced,
      objects: [...synced.objects.slice(0, 2), { ...route, status: {} }],
    };
    writer.update(emptied);
    await waitFor(() => log.withMessage("status run").length === 2);
    expect(calls).toHaveLength(0);
    writer.pause(); // a new leadership term follows
    writer.update(emptied);
    await waitFor(() => calls.length === 1);
    await writer.stop();
    expect(log.withMessage("status run").map((r) => r.planned)).toEqual([0, 0, 1]);
  });

  it("after pause the next term's inputs are written; after stop nothing is", async () => {
    const { calls, patch } = recordingPatcher(() => Promise.reject(new Error("down")));
    const log = captureLogger();
    const writer = createStatusWriter({ patch, logger: log.logger, retryInitialMs: 60_000 });
    writer.update(inputs("7"));
    await waitFor(() => log.withMessage("status run").length === 1);
    writer.pause();
    writer.update(inputs("8"));
    await waitFor(() => log.withMessage("status run").length === 2);
    await writer.stop();
    writer.update(inputs("9"));
    await writer.stop(); // would await a run the update had started
    expect(log.withMessage("status run")).toHaveLength(2);
    expect(
      calls.map(
        (c) => (c.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion,
      ),
    ).toEqual(["7", "8"]);
  });
});

describe("status writer: the fleet condition", () => {
  it("writes the fleet's summary, and a change of the fleet's view writes it again", async () => {
    const V = "2026-12-03T10:00:00.000000000Z";
    let summary: FleetSummary = {
      version: V,
      clusters: [{ cluster: "east", state: "behind", version: "", reasons: [] }],
    };
    const listeners = new Set<() => void>();
    const fleet = {
      summaries: () => new Map([["shop/cart", summary]]),
      onChange: (listener: () => void) => {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
    const { calls, patch } = recordingPatcher();
    const writer = createStatusWriter({
      patch,
      logger: captureLogger().logger,
      fleet,
      fleetDelayMs: 1,
    });
    const fleetCondition = (call: number) => {
      const body = calls[call]?.body as {
        status: { parents: { conditions: { type: string; reason: string }[] }[] };
      };
      return body.status.parents[0]?.conditions.find((c) => c.type === FLEET_CONDITION_TYPE)
        ?.reason;
    };
    writer.update(inputs("7"));
    await waitFor(() => calls.length === 1);
    expect(fleetCondition(0)).toBe("Propagating");
    summary = {
      version: V,
      clusters: [{ cluster: "east", state: "in_sync", version: V, reasons: [] }],
    };
    for (const listener of listeners) listener();
    await waitFor(() => calls.length === 2);
    expect(fleetCondition(1)).toBe("InSync");
    await writer.stop();
    expect(listeners.size).toBe(0);
  });
});
