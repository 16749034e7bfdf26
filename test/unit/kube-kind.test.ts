/**
 * The per-kind state of the Kubernetes source, without a server or timers:
 * where a kind is listed and watched, and how its status moves when its
 * informer lists, connects, finds the resource not served, or fails.
 */
import { describe, expect, it } from "vitest";
import { createBackoff } from "../../services/runtime/backoff.js";
import {
  adoptObject,
  createKindState,
  type KindEvent,
  type KindStatus,
  type KindStep,
  type KubeResource,
  stepKind,
} from "../../services/sources/kube-kind.js";
import { KUBERNETES_SOURCE_RESOURCES } from "../../services/sources/kubernetes-source.js";

const backoff = () => createBackoff({ initialMs: 500, maxMs: 30_000 });
const resource = (kind: string) =>
  KUBERNETES_SOURCE_RESOURCES.find((r) => r.kind === kind) as KubeResource;

describe("createKindState", () => {
  const cases: {
    kind: string;
    namespace: string | undefined;
    path: string;
    fieldSelector: string | undefined;
  }[] = [
    {
      kind: "Namespace",
      namespace: undefined,
      path: "/api/v1/namespaces",
      fieldSelector: undefined,
    },
    {
      kind: "Namespace",
      namespace: "team-a",
      path: "/api/v1/namespaces",
      fieldSelector: "metadata.name=team-a",
    },
    { kind: "Service", namespace: undefined, path: "/api/v1/services", fieldSelector: undefined },
    {
      kind: "Service",
      namespace: "team-a",
      path: "/api/v1/namespaces/team-a/services",
      fieldSelector: undefined,
    },
    {
      kind: "HTTPRoute",
      namespace: "a/b",
      path: "/apis/gateway.networking.k8s.io/v1/namespaces/a%2Fb/httproutes",
      fieldSelector: undefined,
    },
    {
      kind: "MeshConfig",
      namespace: "team-a",
      path: "/apis/mesh.aether.dev/v1alpha1/meshconfigs",
      fieldSelector: undefined,
    },
    {
      kind: "ServiceExport",
      namespace: undefined,
      path: "/apis/multicluster.x-k8s.io/v1alpha1/serviceexports",
      fieldSelector: undefined,
    },
  ];
  for (const { kind, namespace, path, fieldSelector } of cases) {
    it(`${kind} in ${namespace ?? "all namespaces"}: ${path}`, () => {
      const state = createKindState(resource(kind), namespace, backoff());
      expect(state.path).toBe(path);
      expect(state.where).toBe(`kubernetes:${path}`);
      expect(state.fieldSelector).toBe(fieldSelector);
      expect([state.listed, state.missing, state.problem, state.informer]).toEqual([
        false,
        false,
        undefined,
        undefined,
      ]);
    });
  }

  it("names the group and version of a resource, or the version alone in the core group", () => {
    expect(createKindState(resource("GRPCRoute"), undefined, backoff()).apiVersion).toBe(
      "gateway.networking.k8s.io/v1",
    );
    expect(createKindState(resource("Service"), undefined, backoff()).apiVersion).toBe("v1");
  });
});

describe("stepKind", () => {
  const kind = createKindState(resource("ServiceExport"), undefined, backoff());
  const where = kind.where;
  const failing = { where, message: "listing or watching failed: connect ECONNREFUSED" };
  const notServed = {
    where,
    message:
      "the API server does not serve serviceexports (multicluster.x-k8s.io/v1alpha1); " +
      "is its CustomResourceDefinition installed? Treated as empty and tried again every 30000 ms",
  };
  const fresh: KindStatus = { listed: false, missing: false, problem: undefined };
  const listed: KindStatus = { listed: true, missing: false, problem: undefined };
  const missing: KindStatus = { listed: true, missing: true, problem: notServed };
  const failed: KindStatus = { listed: true, missing: false, problem: failing };
  const quiet = { note: undefined, changed: false, resetBackoff: false };

  const cases: { name: string; status: KindStatus; event: KindEvent; step: KindStep }[] = [
    {
      name: "a first list makes the kind listed",
      status: fresh,
      event: { type: "listed" },
      step: { ...quiet, status: listed },
    },
    {
      name: "a list of a kind that was missing: served again, the snapshot changes",
      status: missing,
      event: { type: "listed" },
      step: { ...quiet, status: listed, note: "served-again", changed: true },
    },
    {
      name: "a re-list after a failure keeps the problem until a watch connects",
      status: failed,
      event: { type: "listed" },
      step: { ...quiet, status: failed },
    },
    {
      name: "a watch connecting resets the backoff",
      status: listed,
      event: { type: "connected" },
      step: { ...quiet, status: listed, resetBackoff: true },
    },
    {
      name: "a watch connecting after a failure clears the problem",
      status: failed,
      event: { type: "connected" },
      step: { ...quiet, status: listed, note: "watching-again", resetBackoff: true },
    },
    {
      name: "a 404 before the first list: missing, listed, empty",
      status: fresh,
      event: { type: "not-served" },
      step: { status: missing, note: "not-served", changed: true, resetBackoff: true },
    },
    {
      name: "a 404 again: still missing, not noted again",
      status: missing,
      event: { type: "not-served" },
      step: { ...quiet, status: missing, changed: true, resetBackoff: true },
    },
    {
      name: "a failure before the first list: a problem, not listed",
      status: fresh,
      event: { type: "failed", message: "connect ECONNREFUSED" },
      step: { ...quiet, status: { ...fresh, problem: failing } },
    },
    {
      name: "a failure of a listed kind: a problem, the objects kept",
      status: listed,
      event: { type: "failed", message: "connect ECONNREFUSED" },
      step: { ...quiet, status: failed },
    },
    {
      name: "a failure of a missing kind: still missing, the problem replaced",
      status: missing,
      event: { type: "failed", message: "connect ECONNREFUSED" },
      step: { ...quiet, status: { ...missing, problem: failing } },
    },
  ];
  for (const { name, status, event, step } of cases) {
    it(name, () => {
      expect(stepKind(kind, 30_000, status, event)).toEqual(step);
    });
  }
});

describe("adoptObject", () => {
  const kind = createKindState(resource("Service"), undefined, backoff());

  it("fills the apiVersion and kind a list item lacks, and drops managedFields", () => {
    const item = { metadata: { name: "s", managedFields: [{ manager: "kubectl" }] } };
    expect(adoptObject(kind, item)).toEqual({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "s" },
    });
  });

  it("returns an object that has both as it is", () => {
    const item = { apiVersion: "v1", kind: "Service", metadata: { name: "s" } };
    expect(adoptObject(kind, item)).toBe(item);
  });

  it("keeps only the ca.crt data key of a ConfigMap (what a BackendTLSPolicy reads)", () => {
    const configMaps = createKindState(resource("ConfigMap"), undefined, backoff());
    const item = {
      metadata: { namespace: "shop", name: "ca" },
      data: { "ca.crt": "PEM", "big.json": "x".repeat(1000) },
      binaryData: { blob: "AAAA" },
    };
    expect(adoptObject(configMaps, item)).toEqual({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { namespace: "shop", name: "ca" },
      data: { "ca.crt": "PEM" },
    });
    const other = { metadata: { name: "s" }, data: { "big.json": "x" } };
    expect(adoptObject(kind, other)).toEqual({ apiVersion: "v1", kind: "Service", ...other });
  });
});
