/**
 * The projection limits, pure: the size bound never undercounts an
 * encoding, a projection over a limit is found out, and the exporter's
 * `limitProjection` keeps the routes that fit and rejects the rest as
 * `too_large`, leaving content that fits once stamped.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  BackendTlsSchema,
  HttpFilterSchema,
  PathMatchType,
  type Route,
  RouteKind,
  RouteRole,
  RouteSchema,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
  VirtualHostSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { projectionContent } from "../../services/common/projection-content.js";
import {
  countRules,
  DEFAULT_PROJECTION_LIMITS,
  encodedSizeBound,
  projectionLimits,
  projectionSizeProblem,
  STAMP_ALLOWANCE,
} from "../../services/common/projection-limits.js";
import { projectServices } from "../../services/common/projector.js";
import { limitProjection } from "../../services/common/projector-limits.js";
import { readManifestObjects } from "../support/memory-source.js";
import { makeProjection } from "../support/projections.js";

/** A route `name` of shop/web with `rules` rules, each matching a path of `pathLength` characters. */
function route(name: string, rules = 1, pathLength = 10, kind = RouteKind.HTTP): Route {
  return create(RouteSchema, {
    kind,
    namespace: "shop",
    name,
    role: RouteRole.PRODUCER,
    parentRefs: [{ service: "shop/web", port: 80 }],
    rules: Array.from({ length: rules }, (_, i) => ({
      matches: [
        { path: { type: PathMatchType.PATH_PREFIX, value: `/${i}`.padEnd(pathLength, "x") } },
      ],
      backends: [{ service: "shop/web", port: 80, weight: 1 }],
    })),
  });
}

function projection(routes: Route[]): ServiceConfigProjection {
  return create(ServiceConfigProjectionSchema, { service: "shop/web", routes });
}

describe("encodedSizeBound", () => {
  it("is never below the encoding, for the fixtures and built projections", async () => {
    const projections = [
      ...projectServices(await readManifestObjects()).projections,
      makeProjection("shop/a", { origin: "hub" }),
      projection([route("r", 3, 500), route("g", 2, 20, RouteKind.GRPC)]),
      projection([route("unicode", 1, 1)].map((r) => ({ ...r, name: "ñ🙂".repeat(100) }))),
      create(ServiceConfigProjectionSchema, {}),
    ];
    for (const p of projections) {
      const actual = toBinary(ServiceConfigProjectionSchema, p).length;
      expect(encodedSizeBound(p)).toBeGreaterThanOrEqual(actual);
      for (const r of p.routes) {
        expect(encodedSizeBound(r)).toBeGreaterThanOrEqual(toBinary(RouteSchema, r).length);
      }
    }
  });
});

describe("projectionLimits", () => {
  it("applies overrides and refuses limits that are not positive integers", () => {
    expect(projectionLimits()).toEqual(DEFAULT_PROJECTION_LIMITS);
    expect(DEFAULT_PROJECTION_LIMITS).toEqual({
      maxBytes: 262_144,
      maxRoutes: 256,
      maxRules: 1024,
    });
    expect(projectionLimits({ maxRoutes: 3 }).maxRoutes).toBe(3);
    expect(() => projectionLimits({ maxRules: 0 })).toThrow(RangeError);
    expect(() => projectionLimits({ maxRoutes: 1.5 })).toThrow(RangeError);
    expect(() => projectionLimits({ maxBytes: STAMP_ALLOWANCE })).toThrow(RangeError);
  });
});

describe("projectionSizeProblem", () => {
  const limits = projectionLimits({ maxBytes: 2_000, maxRoutes: 3, maxRules: 5 });
  it.each<[string, Route[], RegExp | undefined]>([
    ["within every limit", [route("a"), route("b", 2)], undefined],
    [
      "too many routes",
      [route("a"), route("b"), route("c"), route("d")],
      /holds 4 routes; at most 3/,
    ],
    ["too many rules", [route("a", 3), route("b", 3)], /holds 6 rules; at most 5/],
    ["too many bytes", [route("a", 1, 2_500)], /takes \d+ bytes; at most 2000 are allowed/],
  ])("%s", (_name, routes, problem) => {
    const found = projectionSizeProblem(projection(routes), limits);
    if (problem === undefined) expect(found).toBeUndefined();
    else expect(found).toMatch(problem);
  });

  it("finds a projection under the default limits fine", () => {
    expect(projectionSizeProblem(makeProjection("shop/a"), DEFAULT_PROJECTION_LIMITS)).toBe(
      undefined,
    );
  });
});

describe("limitProjection", () => {
  it("returns a projection within the limits as it is", () => {
    const p = projection([route("a"), route("b")]);
    const limited = limitProjection(p, DEFAULT_PROJECTION_LIMITS);
    expect(limited.projection).toBe(p);
    expect(limited.rejections).toEqual([]);
  });

  it("keeps the routes that fit, in order, and rejects the rest as too_large", () => {
    const limits = projectionLimits({ maxRoutes: 3 });
    const routes = ["a", "b", "c", "d", "e"].map((name) => route(name));
    const limited = limitProjection(projection(routes), limits);
    expect(limited.projection.routes.map((r) => r.name)).toEqual(["a", "b", "c"]);
    expect(limited.rejections.map((r) => [r.route.name, r.reason, r.services])).toEqual([
      ["d", "too_large", ["shop/web"]],
      ["e", "too_large", ["shop/web"]],
    ]);
    expect(limited.rejections[0]?.message).toMatch(/holds at most 3 routes/);
  });

  it("counts rules across routes, and keeps a later route that fits", () => {
    const limits = projectionLimits({ maxRules: 4 });
    const routes = [
      route("a", 2),
      route("big", 3),
      route("c", 2),
      route("g", 1, 10, RouteKind.GRPC),
    ];
    const limited = limitProjection(projection(routes), limits);
    expect(limited.projection.routes.map((r) => r.name)).toEqual(["a", "c"]);
    expect(limited.rejections.map((r) => [r.route.kind, r.route.name])).toEqual([
      ["HTTPRoute", "big"],
      ["GRPCRoute", "g"],
    ]);
    expect(countRules(limited.projection)).toBe(4);
  });

  it("keeps the content within the byte limit less the stamp allowance", () => {
    const limits = DEFAULT_PROJECTION_LIMITS;
    // 300 KiB of routes: the first ones fit in 256 KiB, the rest do not.
    const routes = Array.from({ length: 30 }, (_, i) =>
      route(`r-${String(i).padStart(2, "0")}`, 10, 1_000),
    );
    const limited = limitProjection(projection(routes), limits);
    const content = projectionContent(limited.projection).length;
    expect(content).toBeLessThanOrEqual(limits.maxBytes - STAMP_ALLOWANCE);
    expect(limited.rejections.length).toBeGreaterThan(0);
    expect(limited.projection.routes.length + limited.rejections.length).toBe(30);
    expect(limited.rejections[0]?.message).toMatch(/takes at most 262016 bytes/);
    // Whatever a route's size, what is kept stays within the limits.
    expect(projectionSizeProblem(limited.projection, limits)).toBeUndefined();
  });

  it("keeps HTTP filters before routes, in run order, and rejects those that do not fit", () => {
    const limits = DEFAULT_PROJECTION_LIMITS;
    // Five 60 KiB Lua filters: four fit in 256 KiB, the fifth does not, nor does a route after them.
    const filters = Array.from({ length: 5 }, (_, i) =>
      create(HttpFilterSchema, {
        namespace: "shop",
        name: `lua-${i}`,
        extension: { case: "lua", value: { source: "x".repeat(60_000) } },
      }),
    );
    const p = create(ServiceConfigProjectionSchema, {
      service: "shop/web",
      routes: [route("a", 30, 1_000)],
      httpFilters: filters,
    });
    const limited = limitProjection(p, limits);
    expect(limited.projection.httpFilters.map((f) => f.name)).toEqual([
      "lua-0",
      "lua-1",
      "lua-2",
      "lua-3",
    ]);
    expect(limited.rejections.map((r) => [r.route.kind, r.route.name, r.reason])).toEqual([
      ["HTTPFilter", "lua-4", "too_large"],
      ["HTTPRoute", "a", "too_large"],
    ]);
    expect(projectionSizeProblem(limited.projection, limits)).toBeUndefined();
  });

  it("holds backend TLS entries (CA bundles) to the byte limit before the routes", () => {
    const limits = projectionLimits({ maxBytes: 8 * 1024 });
    const pem = (kb: number) =>
      `-----BEGIN CERTIFICATE-----\n${"A".repeat(kb * 1024)}\n-----END CERTIFICATE-----\n`;
    const tls = (port: number, name: string, kb: number) =>
      create(BackendTlsSchema, {
        port,
        hostname: "web.shop",
        caCertificatesPem: pem(kb),
        policyNamespace: "shop",
        policyName: name,
      });
    const p = create(ServiceConfigProjectionSchema, {
      service: "shop/web",
      routes: [route("a"), route("b", 1, 5_000)],
      backendTls: [tls(0, "all", 3), tls(443, "huge", 9), tls(8443, "small", 1)],
    });
    const limited = limitProjection(p, limits);
    expect(limited.projection.backendTls.map((e) => e.policyName)).toEqual(["all", "small"]);
    expect(limited.projection.routes.map((r) => r.name)).toEqual(["a"]);
    expect(limited.rejections.map((r) => [r.route.kind, r.route.name, r.reason])).toEqual([
      ["BackendTLSPolicy", "huge", "too_large"],
      ["HTTPRoute", "b", "too_large"],
    ]);
    expect(limited.rejections[0]?.message).toMatch(/settings for port 443 .* do not fit/);
    expect(projectionSizeProblem(limited.projection, limits)).toBeUndefined();
  });

  it("holds VirtualHost entries to the byte limit after backend TLS, before the routes", () => {
    const limits = projectionLimits({ maxBytes: 8 * 1024 });
    // 16 names of 253 characters: about 4 KiB per VirtualHost, the most its CRD allows.
    const names = (tag: string) =>
      Array.from(
        { length: 16 },
        (_, i) =>
          `${`${tag}${i}`.padEnd(61, "a")}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(63)}`,
      );
    const host = (name: string) =>
      create(VirtualHostSchema, { hostnames: names(name), namespace: "shop", name });
    const p = create(ServiceConfigProjectionSchema, {
      service: "shop/web",
      routes: [route("a")],
      virtualHosts: [host("x"), host("y"), host("z")],
    });
    expect(p.virtualHosts[0]?.hostnames[0]?.length).toBe(253);
    const limited = limitProjection(p, limits);
    expect(limited.projection.virtualHosts.map((v) => v.name)).toEqual(["x"]);
    expect(limited.projection.routes.map((r) => r.name)).toEqual(["a"]);
    expect(limited.rejections.map((r) => [r.route.kind, r.route.name, r.reason])).toEqual([
      ["VirtualHost", "y", "too_large"],
      ["VirtualHost", "z", "too_large"],
    ]);
    expect(limited.rejections[0]?.message).toMatch(/this VirtualHost's \d+ do not fit/);
    expect(projectionSizeProblem(limited.projection, limits)).toBeUndefined();
  });

  it("keeps HTTP filters first, then backend TLS entries, then routes", () => {
    const limits = projectionLimits({ maxBytes: 8 * 1024 });
    // 3 KiB each: two of the three fit in the 8 KiB budget, whichever kind comes first.
    const filter = (name: string) =>
      create(HttpFilterSchema, {
        namespace: "shop",
        name,
        extension: { case: "lua", value: { source: "x".repeat(3 * 1024) } },
      });
    const tls = create(BackendTlsSchema, {
      port: 0,
      hostname: "web.shop",
      caCertificatesPem: `-----BEGIN CERTIFICATE-----\n${"A".repeat(3 * 1024)}\n-----END CERTIFICATE-----\n`,
      policyNamespace: "shop",
      policyName: "all",
    });
    const p = create(ServiceConfigProjectionSchema, {
      service: "shop/web",
      routes: [route("a", 1, 3 * 1024)],
      httpFilters: [filter("f-0"), filter("f-1")],
      backendTls: [tls],
    });
    const limited = limitProjection(p, limits);
    expect(limited.projection.httpFilters.map((f) => f.name)).toEqual(["f-0", "f-1"]);
    expect(limited.projection.backendTls).toEqual([]);
    expect(limited.projection.routes).toEqual([]);
    expect(limited.rejections.map((r) => [r.route.kind, r.route.name, r.reason])).toEqual([
      ["BackendTLSPolicy", "all", "too_large"],
      ["HTTPRoute", "a", "too_large"],
    ]);

    // With one filter, the backend TLS entry fits next, and the route no longer does.
    const one = limitProjection({ ...p, httpFilters: [filter("f-0")] }, limits);
    expect(one.projection.httpFilters.map((f) => f.name)).toEqual(["f-0"]);
    expect(one.projection.backendTls.map((e) => e.policyName)).toEqual(["all"]);
    expect(one.rejections.map((r) => [r.route.kind, r.route.name])).toEqual([["HTTPRoute", "a"]]);
    expect(projectionSizeProblem(limited.projection, limits)).toBeUndefined();
  });
});
