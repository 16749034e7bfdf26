/**
 * Caller-side (class 2) HTTPFilters, table-driven: a route's ExtensionRef
 * naming an HTTPFilter is resolved against the consumer's own HTTPFilters of
 * the route's namespace (contents, or `not_found` / `invalid_filter`), on
 * rule and backend filters; other references, and every reference while the
 * cluster's filters are unknown, are left bare (dropping what an origin
 * injected); the input is never modified. The agent's local projection and
 * route table resolve the same way, and the outcomes read back for counting.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { projectLocalRoutes } from "../../clients/agent/local-routes.js";
import { tableFingerprint } from "../../clients/agent/route-table-feed.js";
import { countByReason, unresolvedRefs } from "../../clients/agent/unresolved-refs.js";
import {
  type ExtensionRef,
  HttpFilterSchema,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import {
  extensionRefOutcomes,
  type LocalHttpFilters,
  readLocalHttpFilters,
  resolveExtensionRefs,
} from "../../services/common/extension-ref-resolve.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { projectServices } from "../../services/common/projector.js";
import { mergeRouteTable } from "../../services/common/route-merge.js";
import { extensionRefRoute, kubeService } from "../support/kube-objects.js";

const NS = "shop";

function httpFilter(name: string, spec: object, namespace = NS): KubeObject {
  return {
    apiVersion: "mesh.aether.dev/v1alpha1",
    kind: "HTTPFilter",
    metadata: { namespace, name, creationTimestamp: "2026-11-01T09:00:00Z" },
    spec,
  };
}

const LUA = { phase: "AuthN", lua: { source: "-- caller side\nreturn" } };

/** A route of shop/web whose rule and backend each run an ExtensionRef. */
function route(ruleRef: object, backendRef: object = ruleRef): KubeObject {
  return extensionRefRoute(NS, "web-route", "web", ruleRef, backendRef);
}

const ref = (name: string, group = "mesh.aether.dev", kind = "HTTPFilter") => ({
  group,
  kind,
  name,
});

const WEB = kubeService("web", NS, [{ name: "http", port: 80 }]);

/** shop/web's projection of `objects` (exportAll), as an exporter would make it. */
function webProjection(objects: KubeObject[]): ServiceConfigProjection {
  const output = projectServices([WEB, ...objects], { exportAll: true });
  expect(output.rejections).toEqual([]);
  return output.projections.find((p) => p.service === `${NS}/web`) as ServiceConfigProjection;
}

/** The rule's and the backend's ExtensionRef, in that order. */
function refsOf(projection: ServiceConfigProjection): ExtensionRef[] {
  const rule = projection.routes[0]?.rules[0];
  return [rule?.filters[0], rule?.backends[0]?.filters[0]].map((f) =>
    f?.filter.case === "extensionRef" ? f.filter.value : (undefined as never),
  );
}

const FILTERS: LocalHttpFilters = readLocalHttpFilters([
  WEB,
  httpFilter("auth", LUA),
  httpFilter("both", { lua: { source: "x" }, wasm: { url: "https://w", sha256: "0".repeat(64) } }),
  httpFilter("elsewhere", LUA, "other"),
]);

describe("readLocalHttpFilters: the cluster's own HTTPFilters", () => {
  it("converts each (no targets), keeps why an invalid one is invalid, and marks duplicates", () => {
    expect(FILTERS.get("shop/auth")).toMatchObject({
      filter: { namespace: NS, name: "auth", targets: [], extension: { case: "lua" } },
    });
    expect(FILTERS.get("shop/both")).toMatchObject({ reason: "invalid_filter" });
    const dup = readLocalHttpFilters([
      httpFilter("d", LUA),
      httpFilter("d", { ...LUA, priority: 3 }),
    ]);
    expect(dup.get("shop/d")).toMatchObject({ reason: "duplicate_object" });
  });
});

describe("resolveExtensionRefs: a reference resolves in the consumer's cluster", () => {
  const cases: {
    name: string;
    refs: [object, object];
    filters: LocalHttpFilters | undefined;
    want: [string, string];
  }[] = [
    {
      name: "a valid filter of the route's namespace, on the rule and the backend",
      refs: [ref("auth"), ref("auth")],
      filters: FILTERS,
      want: ["filter shop/auth", "filter shop/auth"],
    },
    {
      name: "no such filter (one of another namespace does not count)",
      refs: [ref("missing"), ref("elsewhere")],
      filters: FILTERS,
      want: [
        "unresolved not_found: no HTTPFilter shop/missing in this cluster",
        "unresolved not_found: no HTTPFilter shop/elsewhere in this cluster",
      ],
    },
    {
      name: "an invalid filter",
      refs: [ref("both"), ref("auth")],
      filters: FILTERS,
      want: ["unresolved invalid_filter: HTTPFilter shop/both is invalid", "filter shop/auth"],
    },
    {
      name: "another kind of extension is not ours to resolve",
      refs: [ref("slow", "example.com", "RateLimit"), ref("auth", "mesh.aether.dev", "Other")],
      filters: FILTERS,
      want: ["bare", "bare"],
    },
    {
      name: "the cluster's filters are not known yet",
      refs: [ref("auth"), ref("missing")],
      filters: undefined,
      want: ["bare", "bare"],
    },
  ];
  const describeRef = (r: ExtensionRef): string =>
    r.httpFilter !== undefined
      ? `filter ${r.httpFilter.namespace}/${r.httpFilter.name}`
      : r.unresolvedReason !== ""
        ? `unresolved ${r.unresolvedReason}`
        : "bare";

  for (const c of cases) {
    it(c.name, () => {
      const input = webProjection([route(...c.refs)]);
      const before = toBinary(ServiceConfigProjectionSchema, input);
      const { projection } = resolveExtensionRefs(input, c.filters);
      const got = refsOf(projection).map(describeRef);
      expect(got.map((text, i) => text.slice(0, c.want[i]?.length))).toEqual(c.want);
      expect(toBinary(ServiceConfigProjectionSchema, input)).toEqual(before);
      if (got.every((g) => g === "bare")) expect(projection).toBe(input);
    });
  }

  it("a resolved filter is the consumer's filter, contents and all, without targets", () => {
    const { projection } = resolveExtensionRefs(webProjection([route(ref("auth"))]), FILTERS);
    const [resolved] = refsOf(projection);
    const local = FILTERS.get("shop/auth") as unknown as { filter: never };
    expect(toBinary(HttpFilterSchema, resolved?.httpFilter as never)).toEqual(
      toBinary(HttpFilterSchema, local.filter),
    );
    expect(resolved?.httpFilter?.targets).toEqual([]);
  });

  it("drops an origin's injected contents: only the consumer's resolution counts", () => {
    const input = webProjection([route(ref("missing"), ref("slow", "example.com", "RateLimit"))]);
    const injected = create(HttpFilterSchema, { namespace: NS, name: "missing" });
    for (const r of refsOf(input)) {
      r.httpFilter = injected;
      r.unresolvedReason = "forged";
    }
    for (const filters of [FILTERS, undefined]) {
      const refs = refsOf(resolveExtensionRefs(input, filters).projection);
      expect(refs.map((r) => r.httpFilter)).toEqual([undefined, undefined]);
      expect(refs[1]?.unresolvedReason).toBe("");
    }
  });

  it("reports each outcome, and reads them back from a resolved projection", () => {
    const resolved = resolveExtensionRefs(
      webProjection([route(ref("auth"), ref("missing"))]),
      FILTERS,
    );
    expect(resolved.outcomes.map((o) => [o.route, o.filter, o.reason])).toEqual([
      ["HTTPRoute shop/web-route", "shop/auth", undefined],
      ["HTTPRoute shop/web-route", "shop/missing", "not_found"],
    ]);
    expect(extensionRefOutcomes(resolved.projection).map((o) => o.reason)).toEqual([
      undefined,
      "not_found",
    ]);
  });
});

describe("the agent resolves local and imported routes against its cluster's filters", () => {
  const objects = [WEB, httpFilter("auth", LUA), route(ref("auth"), ref("missing"))];

  it("local routes: resolved as projected (the local version follows the filter's contents)", () => {
    const local = projectLocalRoutes(objects);
    const web = local.projections.get("shop/web") as ServiceConfigProjection;
    expect(refsOf(web).map((r) => r.httpFilter?.name ?? r.unresolvedReason)).toEqual([
      "auth",
      "not_found: no HTTPFilter shop/missing in this cluster",
    ]);
    const edited = projectLocalRoutes([
      WEB,
      httpFilter("auth", { ...LUA, priority: 5 }),
      route(ref("auth"), ref("missing")),
    ]);
    const table = (l: typeof local) =>
      mergeRouteTable({
        dependencies: ["shop/web"],
        local: l.projections,
        imported: new Map(),
        cluster: "west",
      });
    expect(table(edited).services[0]?.version).not.toBe(table(local).services[0]?.version);
  });

  it("imported routes: resolved at the merge, recorded in the entry's resolution (a filter edit changes the table, not the version), counted by reason", () => {
    const exported = webProjection([route(ref("auth"), ref("missing"))]);
    const merge = (filters: LocalHttpFilters | undefined) =>
      mergeRouteTable({
        dependencies: ["shop/web"],
        local: new Map(),
        imported: new Map([["shop/web", { origin: "hub", projection: exported } as never]]),
        cluster: "west",
        filters,
      });
    const table = merge(projectLocalRoutes([httpFilter("auth", LUA)]).filters);
    const entry = table.services[0];
    expect(refsOf(entry?.projection as never)[0]?.httpFilter?.name).toBe("auth");
    expect(entry?.resolution).toMatch(/^shop\/auth=[0-9a-f]{64},shop\/missing=not_found: /);
    expect(refsOf(exported)[0]?.httpFilter).toBeUndefined();
    expect(unresolvedRefs(table).map((u) => `${u.service} ${u.filter} ${u.reason}`)).toEqual([
      "shop/web shop/missing not_found",
    ]);
    expect([...countByReason(unresolvedRefs(table))]).toEqual([["not_found", 1]]);
    const edited = merge(projectLocalRoutes([httpFilter("auth", { ...LUA, priority: 1 })]).filters);
    expect(edited.services[0]?.version).toBe(entry?.version);
    expect(tableFingerprint(edited)).not.toBe(tableFingerprint(table));
    const unknown = merge(undefined);
    expect(unknown.services[0]?.resolution).toBe("");
    expect(unresolvedRefs(unknown)).toEqual([]);
  });
});
