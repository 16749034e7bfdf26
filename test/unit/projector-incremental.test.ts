/**
 * The incremental projector against the full one: after every edit of a
 * random edit sequence (routes changed, moved, duplicated, broken and deleted;
 * Services, ports and ServiceExports added and removed; ReferenceGrants;
 * HTTPFilters attached, reordered, broken and deleted; objects without a name), the projections it has reported add up to exactly
 * `projectServices` of the whole snapshot, byte for byte, with the same
 * rejections and warnings; and small edits do not project everything again.
 */
import { toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { mulberry32 } from "../../services/common/mulberry32.js";
import { type ProjectorOptions, projectServices } from "../../services/common/projector.js";
import { createIncrementalProjector } from "../../services/common/projector-incremental.js";
import { readManifestObjects } from "../support/memory-source.js";

const GW = "gateway.networking.k8s.io/v1";
const NAMESPACES = ["a", "b", "c"];
const NAMES = ["s0", "s1", "s2", "s3", "s4"];

function service(namespace: string, name: string, ports: number[] = [80, 8080]): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace, name },
    spec: { ports: ports.map((port) => ({ name: `p${port}`, port })) },
  };
}

function serviceExport(namespace: string, name: string): KubeObject {
  return {
    apiVersion: "multicluster.x-k8s.io/v1alpha1",
    kind: "ServiceExport",
    metadata: { namespace, name },
  };
}

function grant(namespace: string, from: string): KubeObject {
  return {
    apiVersion: "gateway.networking.k8s.io/v1beta1",
    kind: "ReferenceGrant",
    metadata: { namespace, name: `from-${from}` },
    spec: {
      from: [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute", namespace: from }],
      to: [{ group: "", kind: "Service" }],
    },
  };
}

/** A random HTTPRoute (sometimes a GRPCRoute, sometimes invalid) in `namespace`. */
function randomRoute(next: () => number, namespace: string, name: string): KubeObject {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  const grpc = next() < 0.2;
  const parents = Array.from({ length: 1 + Math.floor(next() * 2) }, () => ({
    group: "",
    kind: "Service",
    name: pick(NAMES),
    ...(next() < 0.3 ? { namespace: pick(NAMESPACES) } : {}),
    ...(next() < 0.5 ? { port: pick([80, 8080, 9999]) } : {}),
  }));
  const backend = () => ({
    name: pick([...NAMES, "missing"]),
    ...(next() < 0.3 ? { namespace: pick(NAMESPACES) } : {}),
    port: pick([80, 8080, 7]),
    weight: Math.floor(next() * 10),
  });
  const rule: Record<string, unknown> = {
    backendRefs: [backend(), ...(next() < 0.4 ? [backend()] : [])],
  };
  if (!grpc && next() < 0.25) {
    const mirror = backend();
    rule.filters = [
      {
        type: "RequestMirror",
        requestMirror: { backendRef: { name: mirror.name, port: mirror.port } },
      },
    ];
  }
  if (!grpc && next() < 0.1) {
    rule.matches = [{ path: { type: "RegularExpression", value: "/(unclosed" } }];
  }
  return {
    apiVersion: GW,
    kind: grpc ? "GRPCRoute" : "HTTPRoute",
    metadata: { namespace, name },
    spec: { parentRefs: parents, rules: [rule] },
  };
}

/**
 * A random HTTPFilter in `namespace`: one or two Service targets (some
 * missing, some naming a port), a random phase and priority, a header
 * mutation or an extAuthz whose backend may be missing, sometimes invalid.
 */
function randomFilter(next: () => number, namespace: string, name: string): KubeObject {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  const targetRefs = Array.from({ length: 1 + Math.floor(next() * 2) }, () => ({
    group: "",
    kind: "Service",
    name: next() < 0.1 ? "missing" : pick(NAMES),
    ...(next() < 0.3 ? { sectionName: pick(["p80", "p8080", "p7"]) } : {}),
  }));
  const roll = next();
  const extension =
    roll < 0.6
      ? { headerMutation: { request: { set: [{ name: "x-f", value: name }] } } }
      : roll < 0.85
        ? {
            extAuthz: {
              backendRef: {
                name: pick([...NAMES, "missing"]),
                ...(next() < 0.3 ? { namespace: pick(NAMESPACES) } : {}),
                port: pick([80, 8080, 7]),
              },
            },
          }
        : roll < 0.93
          ? { wasm: { url: "oci://r/w:1", sha256: next() < 0.5 ? "a".repeat(64) : "bad" } }
          : { lua: { source: "x" }, headerMutation: {} };
  return {
    apiVersion: "mesh.aether.dev/v1alpha1",
    kind: "HTTPFilter",
    metadata: {
      namespace,
      name,
      ...(next() < 0.5
        ? { creationTimestamp: `2026-11-0${1 + Math.floor(next() * 3)}T00:00:00Z` }
        : {}),
    },
    spec: {
      targetRefs,
      phase: pick(["AuthN", "AuthZ", "Stats", "Default"]),
      priority: Math.floor(next() * 3),
      ...extension,
    },
  };
}

/** The starting mesh: every Service, half of them exported, and a route per Service. */
function startingMesh(next: () => number): KubeObject[] {
  const objects: KubeObject[] = [];
  for (const namespace of NAMESPACES) {
    for (const name of NAMES) {
      objects.push(service(namespace, name));
      if (next() < 0.5) objects.push(serviceExport(namespace, name));
      objects.push(randomRoute(next, namespace, `r-${name}`));
      if (next() < 0.4) objects.push(randomFilter(next, namespace, `f-${name}`));
    }
  }
  return objects;
}

/** Applies one random edit to a copy of `objects`; never modifies an object in place. */
function edit(next: () => number, objects: readonly KubeObject[]): KubeObject[] {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  const copy = [...objects];
  const at = Math.floor(next() * copy.length);
  const namespace = pick(NAMESPACES);
  const name = pick(NAMES);
  const roll = next();
  if (roll < 0.3) {
    // Rewrite (or move) an existing route, or add a new one.
    const routes = copy.filter((o) => o.kind === "HTTPRoute" || o.kind === "GRPCRoute");
    const target = next() < 0.8 ? pick(routes) : undefined;
    const replacement = randomRoute(
      next,
      target?.metadata?.namespace ?? namespace,
      target?.metadata?.name ?? `new-${Math.floor(next() * 5)}`,
    );
    if (target === undefined) copy.push(replacement);
    else copy[copy.indexOf(target)] = replacement;
  } else if (roll < 0.4) {
    // A second, different object with a route's identity: both are rejected.
    const routes = copy.filter((o) => o.kind === "HTTPRoute");
    const target = pick(routes);
    if (target !== undefined) {
      copy.push(
        randomRoute(next, target.metadata?.namespace as string, target.metadata?.name as string),
      );
    }
  } else if (roll < 0.5) {
    copy.splice(at, 1);
  } else if (roll < 0.6) {
    const exported = copy.findIndex(
      (o) =>
        o.kind === "ServiceExport" &&
        o.metadata?.namespace === namespace &&
        o.metadata?.name === name,
    );
    if (exported >= 0) copy.splice(exported, 1);
    else copy.push(serviceExport(namespace, name));
  } else if (roll < 0.75) {
    const existing = copy.findIndex(
      (o) =>
        o.kind === "Service" && o.metadata?.namespace === namespace && o.metadata?.name === name,
    );
    const replacement = service(namespace, name, next() < 0.5 ? [80] : [8080, 7]);
    if (existing < 0) copy.push(replacement);
    else if (next() < 0.3) copy.splice(existing, 1);
    else copy[existing] = replacement;
  } else if (roll < 0.82) {
    const existing = copy.findIndex(
      (o) => o.kind === "ReferenceGrant" && o.metadata?.namespace === namespace,
    );
    if (existing >= 0) copy.splice(existing, 1);
    else copy.push(grant(namespace, pick(NAMESPACES)));
  } else if (roll < 0.86) {
    copy.push({ apiVersion: GW, kind: "HTTPRoute", metadata: { namespace }, spec: {} });
  } else if (roll < 0.88) {
    copy.push({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace, name: `cm-${at}` } });
  } else if (roll < 0.95) {
    // Rewrite an HTTPFilter, add one, or (rarely) one without a name.
    const filters = copy.filter((o) => o.kind === "HTTPFilter");
    const target = next() < 0.7 ? pick(filters) : undefined;
    const replacement = randomFilter(
      next,
      target?.metadata?.namespace ?? namespace,
      target?.metadata?.name ?? `nf-${Math.floor(next() * 5)}`,
    );
    if (next() < 0.05) copy.push({ ...replacement, metadata: { namespace } });
    else if (target === undefined) copy.push(replacement);
    else copy[copy.indexOf(target)] = replacement;
  } else {
    // The same content as a new object (a touched file): nothing changes.
    const target = copy[at];
    if (target !== undefined) copy[at] = structuredClone(target);
  }
  return copy;
}

/** The projections and problems of a full projection, comparable with `toEqual`. */
function expected(objects: readonly KubeObject[], options: ProjectorOptions) {
  const output = projectServices(objects, options);
  return {
    projections: new Map(
      output.projections.map((p) => [p.service, toBinary(ServiceConfigProjectionSchema, p)]),
    ),
    rejections: output.rejections,
    warnings: output.warnings,
  };
}

describe("incremental projector", () => {
  const cases: [string, ProjectorOptions][] = [
    ["exported services", {}],
    ["every service (exportAll)", { exportAll: true }],
    ["Gateway reference rules (requireReferenceGrants)", { requireReferenceGrants: true }],
  ];
  for (const [name, options] of cases) {
    it(`adds up to the full projection after every edit of random edit sequences: ${name}`, () => {
      let incrementalUpdates = 0;
      let attachedFilters = 0;
      const filterReasons = new Set<string>();
      for (let seed = 1; seed <= 12; seed++) {
        const next = mulberry32(seed);
        let objects = startingMesh(next);
        const projector = createIncrementalProjector(options);
        const held = new Map<string, Uint8Array>();
        for (let step = 0; step < 60; step++) {
          const update = projector.update(objects);
          if (update.full) held.clear();
          else incrementalUpdates++;
          for (const service of update.removed) held.delete(service);
          for (const p of update.projections)
            held.set(p.service, toBinary(ServiceConfigProjectionSchema, p));
          const want = expected(objects, options);
          const context = `seed ${seed}, step ${step}`;
          expect(held, context).toEqual(want.projections);
          expect(update.rejections, context).toEqual(want.rejections);
          expect(update.warnings, context).toEqual(want.warnings);
          expect(projector.services, context).toEqual(new Set(want.projections.keys()));
          for (const p of update.projections) attachedFilters += p.httpFilters.length;
          for (const r of update.rejections) {
            if (r.route.kind === "HTTPFilter") filterReasons.add(r.reason);
          }
          objects = edit(next, objects);
        }
      }
      // Most edits were applied incrementally, not by projecting everything again.
      expect(incrementalUpdates).toBeGreaterThan(12 * 60 * 0.5);
      // The sequences attach HTTPFilters and reject them for every kind of reason they can.
      expect(attachedFilters).toBeGreaterThan(100);
      expect([...filterReasons].sort()).toEqual(
        expect.arrayContaining([
          "backend_not_found",
          "invalid_filter",
          "invalid_value",
          "unknown_target",
        ]),
      );
    });
  }

  it("re-projects the services it is asked for, exactly as a full projection does, even when nothing changed", () => {
    for (let seed = 1; seed <= 6; seed++) {
      const next = mulberry32(seed);
      let objects = startingMesh(next);
      const projector = createIncrementalProjector();
      projector.update(objects);
      for (let step = 0; step < 30; step++) {
        // Every other step nothing changes; the others are random edits.
        if (step % 2 === 1) objects = edit(next, objects);
        const asked = new Set(
          [0, 1, 2].map(
            () => `${NAMESPACES[Math.floor(next() * 3)]}/${NAMES[Math.floor(next() * 5)]}`,
          ),
        );
        const update = projector.update(objects, { services: asked });
        const want = expected(objects, {}).projections;
        const context = `seed ${seed}, step ${step}`;
        const got = new Map(
          update.projections.map((p) => [p.service, toBinary(ServiceConfigProjectionSchema, p)]),
        );
        for (const service of asked) expect(got.get(service), context).toEqual(want.get(service));
        for (const [service, bytes] of got) expect(bytes, context).toEqual(want.get(service));
      }
    }
  });

  it("re-projects only the services an edit can affect", async () => {
    const objects = await readManifestObjects();
    const projector = createIncrementalProjector();
    const first = projector.update(objects);
    expect(first.full).toBe(true);
    expect(first.projections.map((p) => p.service)).toEqual([
      "payments/ledger",
      "shop/checkout",
      "web/frontend",
    ]);

    // Nothing changed: nothing to re-project.
    const same = projector.update([...objects]);
    expect(same).toMatchObject({ full: false, projections: [], removed: [] });
    expect(same.rejections).toEqual(first.rejections);

    // One route of shop/checkout edited (a new object): only shop/checkout.
    const canary = objects.findIndex((o) => o.metadata?.name === "checkout-canary");
    const edited = [...objects];
    edited[canary] = structuredClone(objects[canary] as KubeObject);
    const weights = (edited[canary] as { spec: { rules: { backendRefs: { weight: number }[] }[] } })
      .spec.rules[0]?.backendRefs;
    (weights?.[0] as { weight: number }).weight = 50;
    const update = projector.update(edited);
    expect(update.full).toBe(false);
    expect(update.projections.map((p) => p.service)).toEqual(["shop/checkout"]);
    expect(update.projections[0]?.routes[0]?.rules[0]?.backends[0]?.weight).toBe(50);

    // Its ServiceExport removed: shop/checkout leaves scope.
    const unexported = edited.filter(
      (o) => !(o.kind === "ServiceExport" && o.metadata?.name === "checkout"),
    );
    const gone = projector.update(unexported);
    expect(gone).toMatchObject({ full: false, projections: [], removed: ["shop/checkout"] });
    expect([...projector.services].sort()).toEqual(["payments/ledger", "web/frontend"]);

    // Asked for it, everything is projected again.
    const full = projector.update(unexported, { full: true });
    expect(full.full).toBe(true);
    expect(full.projections.map((p) => p.service)).toEqual(["payments/ledger", "web/frontend"]);
  });
});
