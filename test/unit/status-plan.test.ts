import { describe, expect, it } from "vitest";
import { FLEET_CONDITION_TYPE, type FleetSummary } from "../../services/common/fleet-condition.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { projectServices } from "../../services/common/projector.js";
import { canonicalJson } from "../../services/common/projector-index.js";
import { createStatusMemo, type StatusMemo } from "../../services/common/status-memo.js";
import { planStatusPatches, type StatusPatch } from "../../services/common/status-plan.js";
import { STATUS_CONTROLLER_NAME } from "../../services/common/status-reasons.js";
import { kubeService, serviceExport } from "../support/kube-objects.js";

const NOW = "2026-12-03T10:00:00Z";
const EARLIER = "2026-12-01T08:00:00Z";
const NS = "shop";
const OTHER = "istio.io/gateway-controller";

const WORLD: KubeObject[] = [
  kubeService("cart", NS, [{ name: "http", port: 8080 }]),
  serviceExport("cart", NS),
  kubeService("orders", NS, [{ name: "http", port: 8080 }]),
  serviceExport("orders", NS),
  kubeService("private", NS, [{ name: "http", port: 8080 }]),
];

const parent = (name: string, extra: object = {}) => ({
  group: "",
  kind: "Service",
  name,
  ...extra,
});

/** An HTTPRoute as the API server holds it (resourceVersion, generation, a status). */
function route(name: string, spec: object, status?: object): KubeObject {
  return {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: { namespace: NS, name, resourceVersion: "7", generation: 3 },
    spec,
    ...(status === undefined ? {} : { status }),
  } as KubeObject;
}

const toCart = { rules: [{ backendRefs: [{ name: "cart", port: 8080 }] }] };

/** Our entry for a Service parent, as the planner writes it. */
function ours(
  service: string,
  accepted: [string, string],
  resolved: [string, string] = ["True", "ResolvedRefs"],
  time = NOW,
  extra: object = {},
) {
  const condition = (type: string, [status, reason]: [string, string]) => ({
    type,
    status,
    reason,
    observedGeneration: 3,
    lastTransitionTime: time,
  });
  return {
    parentRef: { group: "", kind: "Service", namespace: NS, name: service, ...extra },
    controllerName: STATUS_CONTROLLER_NAME,
    conditions: [condition("Accepted", accepted), condition("ResolvedRefs", resolved)],
  };
}

/** Projects `objects` (with WORLD) as the export controller does and plans the status writes. */
function plan(objects: KubeObject[], now = NOW): StatusPatch[] {
  const all = [...WORLD, ...objects];
  const output = projectServices(all);
  const services = new Set(output.projections.map((p) => p.service));
  return planStatusPatches(
    { objects: all, services, rejections: output.rejections, warnings: output.warnings },
    now,
  );
}

/** The patch's list without the messages (checked apart). */
function entriesOf(patch: StatusPatch | undefined): unknown {
  const status = patch?.body.status as
    | Record<string, { conditions: Record<string, unknown>[] }[]>
    | undefined;
  const list = status?.parents ?? status?.ancestors;
  return list?.map((entry) => ({
    ...entry,
    conditions: entry.conditions?.map(({ message: _m, ...rest }: Record<string, unknown>) => rest),
  }));
}

/** The `status.parents` a patch writes; throws when there is no patch. */
function listOf(patch: StatusPatch | undefined): unknown[] {
  if (patch === undefined) throw new Error("no patch");
  return (patch.body.status as { parents: unknown[] }).parents;
}

/** The entries of a status written earlier by `plan` at EARLIER. */
function writtenEarlier(objects: KubeObject[]): unknown[] {
  const patch = plan(objects, EARLIER)[0];
  return listOf(patch);
}

describe("status plan: routes (GAMMA status.parents)", () => {
  const cases: {
    name: string;
    objects: KubeObject[];
    want: unknown[] | undefined;
  }[] = [
    {
      name: "an accepted route gets Accepted and ResolvedRefs True, at now, with its generation",
      objects: [route("r", { parentRefs: [parent("cart")], ...toCart })],
      want: [ours("cart", ["True", "Accepted"])],
    },
    {
      name: "a route attached to two Services gets one entry per Service, in spec order",
      objects: [route("r", { parentRefs: [parent("orders"), parent("cart")], ...toCart })],
      want: [ours("orders", ["True", "Accepted"]), ours("cart", ["True", "Accepted"])],
    },
    {
      name: "a backendRef to a missing Service: Accepted, ResolvedRefs False BackendNotFound",
      objects: [
        route("r", {
          parentRefs: [parent("cart")],
          rules: [{ backendRefs: [{ name: "gone", port: 8080 }] }],
        }),
      ],
      want: [ours("cart", ["True", "Accepted"], ["False", "BackendNotFound"])],
    },
    {
      name: "an invalid value: Accepted False UnsupportedValue",
      objects: [
        route("r", {
          parentRefs: [parent("cart")],
          rules: [
            { matches: [{ path: { type: "RegularExpression", value: "(" } }], ...toCart.rules[0] },
          ],
        }),
      ],
      want: [ours("cart", ["False", "UnsupportedValue"])],
    },
    {
      name: "a parentRef to a port the Service lacks: that entry NoMatchingParent, the other accepted",
      objects: [
        route("r", {
          parentRefs: [parent("cart", { port: 9999 }), parent("cart", { port: 8080 })],
          ...toCart,
        }),
      ],
      want: [
        ours("cart", ["False", "NoMatchingParent"], ["True", "ResolvedRefs"], NOW, { port: 9999 }),
        ours("cart", ["True", "Accepted"], ["True", "ResolvedRefs"], NOW, { port: 8080 }),
      ],
    },
    {
      name: "a Service the hub does not project gets no entry (nothing to write)",
      objects: [route("r", { parentRefs: [parent("private")], ...toCart })],
      want: undefined,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const patches = plan(c.objects);
      if (c.want === undefined) {
        expect(patches).toEqual([]);
        return;
      }
      expect(patches).toHaveLength(1);
      expect(patches[0]?.path).toBe(
        "/apis/gateway.networking.k8s.io/v1/namespaces/shop/httproutes/r/status",
      );
      expect(patches[0]?.body.metadata).toEqual({ resourceVersion: "7" });
      expect(Object.keys(patches[0]?.body ?? {})).toEqual(["metadata", "status"]);
      expect(entriesOf(patches[0])).toEqual(c.want);
    });
  }

  it("says why in the messages: the projector's message behind each False condition", () => {
    const [patch] = plan([
      route("r", {
        parentRefs: [parent("cart")],
        rules: [{ backendRefs: [{ name: "gone", port: 8080 }] }],
      }),
    ]);
    const [entry] = listOf(patch) as { conditions: { message: string }[] }[];
    expect(entry?.conditions[1]?.message).toMatch(/gone/);
  });

  it("writes nothing when the object already has exactly the wanted own entries", () => {
    const spec = { parentRefs: [parent("cart")], ...toCart };
    const status = { parents: writtenEarlier([route("r", spec)]) };
    expect(plan([route("r", spec, status)])).toEqual([]);
  });

  it("writes nothing when the API server returns the same entries with their keys sorted", () => {
    const spec = { parentRefs: [parent("cart")], ...toCart };
    const sorted = JSON.parse(canonicalJson(writtenEarlier([route("r", spec)])));
    expect(JSON.stringify(sorted)).not.toBe(JSON.stringify(writtenEarlier([route("r", spec)])));
    expect(plan([route("r", spec, { parents: sorted })])).toEqual([]);
  });

  it("writes a GRPCRoute's parents to its own status path", () => {
    const grpc = {
      ...route("g", {
        parentRefs: [parent("cart")],
        rules: [{ backendRefs: [{ name: "cart", port: 8080 }] }],
      }),
      kind: "GRPCRoute",
    };
    const [patch] = plan([grpc]);
    expect(patch?.path).toBe(
      "/apis/gateway.networking.k8s.io/v1/namespaces/shop/grpcroutes/g/status",
    );
    expect(entriesOf(patch)).toEqual([ours("cart", ["True", "Accepted"])]);
  });

  it("keeps other controllers' entries, first, and replaces only its own", () => {
    const spec = { parentRefs: [parent("cart")], ...toCart };
    const theirs = {
      parentRef: { group: "gateway.networking.k8s.io", kind: "Gateway", name: "edge" },
      controllerName: OTHER,
      conditions: [{ type: "Accepted", status: "True", reason: "Accepted", message: "" }],
    };
    const stale = {
      ...ours("orders", ["True", "Accepted"]),
      controllerName: STATUS_CONTROLLER_NAME,
    };
    const [patch] = plan([route("r", spec, { parents: [stale, theirs] })]);
    expect(entriesOf(patch)).toEqual([
      { ...theirs, conditions: [{ type: "Accepted", status: "True", reason: "Accepted" }] },
      ours("cart", ["True", "Accepted"]),
    ]);
  });

  it("keeps lastTransitionTime while a condition's status stays, and moves it when it flips", () => {
    const good = { parentRefs: [parent("cart")], ...toCart };
    const status = { parents: writtenEarlier([route("r", good)]) };
    // A new generation only: the conditions are rewritten with their old times.
    const bumped = {
      ...route("r", good, status),
      metadata: { namespace: NS, name: "r", resourceVersion: "8", generation: 4 },
    };
    const [regenerated] = plan([bumped as KubeObject]);
    const conditions = (
      entriesOf(regenerated) as {
        conditions: { lastTransitionTime: string; observedGeneration: number }[];
      }[]
    )[0]?.conditions;
    expect(conditions?.map((c) => [c.lastTransitionTime, c.observedGeneration])).toEqual([
      [EARLIER, 4],
      [EARLIER, 4],
    ]);
    // The backend goes away: ResolvedRefs flips (new time), Accepted stays (old time).
    const broken = {
      parentRefs: [parent("cart")],
      rules: [{ backendRefs: [{ name: "gone", port: 8080 }] }],
    };
    const [flipped] = plan([route("r", broken, status)]);
    expect(entriesOf(flipped)).toEqual(
      [ours("cart", ["True", "Accepted"], ["False", "BackendNotFound"], NOW, {})].map((e) => ({
        ...e,
        conditions: [{ ...e.conditions[0], lastTransitionTime: EARLIER }, e.conditions[1]],
      })),
    );
  });

  it("removes its own entries from a route no longer attached to a projected Service", () => {
    const status = {
      parents: writtenEarlier([route("r", { parentRefs: [parent("cart")], ...toCart })]),
    };
    const [patch] = plan([route("r", { parentRefs: [parent("private")], ...toCart }, status)]);
    expect(entriesOf(patch)).toEqual([]);
  });

  it("skips objects without a resourceVersion (manifests, not API objects)", () => {
    const manifest = route("r", { parentRefs: [parent("cart")], ...toCart });
    const { resourceVersion: _rv, ...metadata } = manifest.metadata ?? {};
    expect(plan([{ ...manifest, metadata }])).toEqual([]);
  });

  it("leaves out own entries past the list's maxItems (32), other controllers' first", () => {
    const theirs = Array.from({ length: 31 }, (_, i) => ({
      parentRef: { group: "gateway.networking.k8s.io", kind: "Gateway", name: `g${i}` },
      controllerName: OTHER,
      conditions: [],
    }));
    const spec = { parentRefs: [parent("cart"), parent("orders")], ...toCart };
    const [patch] = plan([route("r", spec, { parents: theirs })]);
    const list = listOf(patch) as { controllerName: string }[];
    expect(list).toHaveLength(32);
    expect(list.filter((e) => e.controllerName === STATUS_CONTROLLER_NAME)).toHaveLength(1);
  });
});

/** A policy of `kind` in NS, as the API server holds it. */
function policy(kind: string, name: string, spec: object, metadata: object = {}): KubeObject {
  const apiVersion =
    kind === "BackendTLSPolicy" ? "gateway.networking.k8s.io/v1" : "mesh.aether.dev/v1alpha1";
  return {
    apiVersion,
    kind,
    metadata: { namespace: NS, name, resourceVersion: "9", generation: 1, ...metadata },
    spec,
  };
}

/** The policy patches' ancestors as [ancestor name, status, reason]. */
function ancestors(patches: StatusPatch[], name: string): unknown {
  const patch = patches.find((p) => p.name === name);
  const list = (patch?.body.status as { ancestors: Record<string, unknown>[] } | undefined)
    ?.ancestors;
  return list?.map((e) => {
    const ref = e.ancestorRef as { name: string; kind: string; group: string };
    const [condition] = e.conditions as { type: string; status: string; reason: string }[];
    expect(e.controllerName).toBe(STATUS_CONTROLLER_NAME);
    expect([ref.group, ref.kind, condition?.type]).toEqual(["", "Service", "Accepted"]);
    return [ref.name, condition?.status, condition?.reason];
  });
}

const target = (name: string) => ({ group: "", kind: "Service", name });
const HEADERS = { headerMutation: { request: { set: [{ name: "x-a", value: "1" }] } } };

describe("status plan: attached policies (GEP-713 status.ancestors)", () => {
  it("an accepted HTTPFilter: Accepted on its target Service", () => {
    const patches = plan([policy("HTTPFilter", "f", { targetRefs: [target("cart")], ...HEADERS })]);
    expect(patches[0]?.path).toBe(
      "/apis/mesh.aether.dev/v1alpha1/namespaces/shop/httpfilters/f/status",
    );
    expect(ancestors(patches, "f")).toEqual([["cart", "True", "Accepted"]]);
  });

  it("an invalid HTTPFilter: Accepted False Invalid on every target", () => {
    const bad = {
      targetRefs: [target("cart"), target("orders")],
      headerMutation: { request: { set: [{ name: "", value: 1 }] } },
    };
    expect(ancestors(plan([policy("HTTPFilter", "f", bad)]), "f")).toEqual([
      ["cart", "False", "Invalid"],
      ["orders", "False", "Invalid"],
    ]);
  });

  it("a VirtualHost naming a missing Service: TargetNotFound on that Service", () => {
    const host = policy("VirtualHost", "v", {
      targetRef: target("nowhere"),
      hostnames: ["a.example.com"],
    });
    expect(ancestors(plan([host]), "v")).toEqual([["nowhere", "False", "TargetNotFound"]]);
  });

  it("the newer of two VirtualHosts claiming a host name for different Services: Conflicted", () => {
    const older = policy(
      "VirtualHost",
      "a",
      { targetRef: target("cart"), hostnames: ["x.example.com"] },
      { creationTimestamp: "2026-01-01T00:00:00Z" },
    );
    const newer = policy(
      "VirtualHost",
      "b",
      { targetRef: target("orders"), hostnames: ["x.example.com"] },
      { creationTimestamp: "2026-02-01T00:00:00Z" },
    );
    const patches = plan([older, newer]);
    expect(ancestors(patches, "a")).toEqual([["cart", "True", "Accepted"]]);
    expect(ancestors(patches, "b")).toEqual([["orders", "False", "Conflicted"]]);
  });

  it("a BackendTLSPolicy that loses one target to an older one: Conflicted there, Accepted on the other", () => {
    const ca = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { namespace: NS, name: "ca" },
      data: { "ca.crt": "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n" },
    } as KubeObject;
    const tls = (name: string, targets: object[], created: string) =>
      policy(
        "BackendTLSPolicy",
        name,
        {
          targetRefs: targets,
          validation: {
            caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "ca" }],
            hostname: "cart.shop.example",
          },
        },
        { creationTimestamp: created },
      );
    const patches = plan([
      ca,
      tls("old", [target("cart")], "2026-01-01T00:00:00Z"),
      tls("new", [target("cart"), target("orders")], "2026-02-01T00:00:00Z"),
    ]);
    expect(patches.find((p) => p.name === "new")?.path).toBe(
      "/apis/gateway.networking.k8s.io/v1/namespaces/shop/backendtlspolicies/new/status",
    );
    expect(ancestors(patches, "old")).toEqual([["cart", "True", "Accepted"]]);
    expect(ancestors(patches, "new")).toEqual([
      ["cart", "False", "Conflicted"],
      ["orders", "True", "Accepted"],
    ]);
  });

  it("a policy on a Service the hub does not project gets no entry", () => {
    expect(
      plan([policy("HTTPFilter", "f", { targetRefs: [target("private")], ...HEADERS })]),
    ).toEqual([]);
  });
});

describe("status plan: the fleet condition", () => {
  const V = "2026-12-03T10:00:00.000000000Z";
  const spec = { parentRefs: [parent("cart")], ...toCart };
  const inSync: FleetSummary = {
    version: V,
    clusters: [{ cluster: "east", state: "in_sync", version: V, reasons: [] }],
  };
  const behind: FleetSummary = {
    version: V,
    clusters: [{ cluster: "east", state: "behind", version: "", reasons: [] }],
  };

  function planWith(
    objects: KubeObject[],
    fleet: ReadonlyMap<string, FleetSummary> | undefined,
    memo?: StatusMemo,
  ): StatusPatch[] {
    const all = [...WORLD, ...objects];
    const output = projectServices(all);
    const services = new Set(output.projections.map((p) => p.service));
    const inputs = {
      objects: all,
      services,
      rejections: output.rejections,
      warnings: output.warnings,
    };
    return planStatusPatches({ ...inputs, fleet }, NOW, memo);
  }
  const conditionsOf = (patch: StatusPatch | undefined) =>
    (listOf(patch) as { conditions: { type: string; status: string; reason: string }[] }[])[0]
      ?.conditions;

  it("an accepted parent carries the fleet's summary of its Service, pending without one", () => {
    const [synced] = planWith([route("r", spec)], new Map([["shop/cart", inSync]]));
    expect(conditionsOf(synced)?.[2]).toMatchObject({
      type: FLEET_CONDITION_TYPE,
      status: "True",
      reason: "InSync",
    });
    const [pending] = planWith([route("r", spec)], new Map());
    expect(conditionsOf(pending)?.[2]).toMatchObject({ status: "Unknown", reason: "Pending" });
    const [none] = planWith([route("r", spec)], undefined);
    expect(conditionsOf(none)?.map((c) => c.type)).toEqual(["Accepted", "ResolvedRefs"]);
  });

  it("a rejected parent carries no fleet condition", () => {
    const bad = {
      parentRefs: [parent("cart")],
      rules: [
        { matches: [{ path: { type: "RegularExpression", value: "(" } }], ...toCart.rules[0] },
      ],
    };
    const [patch] = planWith([route("r", bad)], new Map([["shop/cart", inSync]]));
    expect(conditionsOf(patch)?.map((c) => [c.type, c.status])).toEqual([
      ["Accepted", "False"],
      ["ResolvedRefs", "True"],
    ]);
  });

  it("a change of the fleet's summary is planned again past the memo", () => {
    const memo = createStatusMemo();
    const status = {
      parents: listOf(planWith([route("r", spec)], new Map([["shop/cart", inSync]]))[0]),
    };
    const written = route("r", spec, status);
    expect(planWith([written], new Map([["shop/cart", inSync]]), memo)).toEqual([]);
    expect(memo.size).toBe(1);
    const [patch] = planWith([written], new Map([["shop/cart", behind]]), memo);
    expect(conditionsOf(patch)?.[2]).toMatchObject({ status: "False", reason: "Propagating" });
  });
});
