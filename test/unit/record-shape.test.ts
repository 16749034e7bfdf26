/**
 * The shape a record must have for its key: the mesh record carries a
 * MeshConfig and nothing else, a service's projection no MeshConfig. The
 * store's decoder skips and counts a value of the wrong shape; its writers
 * refuse one.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  BackendSchema,
  ExtensionRefSchema,
  FilterSchema,
  type HttpFilter,
  HttpFilterSchema,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { checkRecordShape } from "../../services/common/record-shape.js";
import { createEntryDecoder } from "../../services/registrar/store/decode-entry.js";
import { createMemoryStore } from "../../services/registrar/store/memory-store.js";
import { DEFAULT_STORE_PREFIX, projectionKey } from "../../services/registrar/store/store-key.js";
import { captureLogger } from "../support/capture-logger.js";
import { meshProjection } from "../support/mesh-projection.js";
import { makeProjection } from "../support/projections.js";

const mesh = meshProjection();
const withRoutes = (projection: ServiceConfigProjection) =>
  create(ServiceConfigProjectionSchema, {
    service: projection.service,
    version: projection.version,
    meshConfig: projection.meshConfig,
    routes: makeProjection("shop/web").routes,
    virtualHosts: [{ hostnames: ["shop.example"] }],
  });
const withMesh = (projection: ServiceConfigProjection) =>
  create(ServiceConfigProjectionSchema, {
    service: projection.service,
    version: projection.version,
    routes: projection.routes,
    meshConfig: mesh.meshConfig,
  });
/** shop/web with an ExtensionRef to an HTTPFilter on its first rule or its first backend. */
const withExtensionRef = (
  at: "rule" | "backend",
  ref: { httpFilter?: HttpFilter; unresolvedReason?: string },
) => {
  const projection = makeProjection("shop/web");
  const rule = projection.routes[0]?.rules[0];
  if (rule === undefined) throw new Error("makeProjection gives a route with a rule");
  const filter = create(FilterSchema, {
    filter: {
      case: "extensionRef",
      value: create(ExtensionRefSchema, {
        group: "mesh.aether.dev",
        kind: "HTTPFilter",
        name: "auth",
        ...ref,
      }),
    },
  });
  if (at === "rule") rule.filters.push(filter);
  else {
    if (rule.backends[0] === undefined)
      rule.backends.push(create(BackendSchema, { service: "shop/web" }));
    rule.backends[0]?.filters.push(filter);
  }
  return projection;
};
const consumerOnly =
  /^projection of shop\/web: route .* carries an ExtensionRef resolved by a consumer/;
const bare = create(ServiceConfigProjectionSchema, { service: "@mesh", version: mesh.version });

/** [name, key, projection, the problem (a pattern) or undefined]. */
const cases: [string, string, ServiceConfigProjection, RegExp | undefined][] = [
  ["a mesh record with its MeshConfig", "@mesh", mesh, undefined],
  ["a service's projection", "shop/web", makeProjection("shop/web"), undefined],
  [
    "a mesh record without a MeshConfig",
    "@mesh",
    bare,
    /^the mesh record \(@mesh\) carries no mesh_config$/,
  ],
  [
    "a mesh record with routes and virtual hosts",
    "@mesh",
    withRoutes(mesh),
    /^the mesh record \(@mesh\) carries routes, virtual_hosts, which only a service's/,
  ],
  [
    "a service's projection with a MeshConfig",
    "shop/web",
    withMesh(makeProjection("shop/web")),
    /^projection of shop\/web carries a mesh_config, which only the mesh record/,
  ],
  [
    "a service's projection with a bare ExtensionRef",
    "shop/web",
    withExtensionRef("rule", {}),
    undefined,
  ],
  [
    "a service's projection whose rule carries a resolved HTTPFilter",
    "shop/web",
    withExtensionRef("rule", { httpFilter: create(HttpFilterSchema, { name: "auth" }) }),
    consumerOnly,
  ],
  [
    "a service's projection whose backend carries an unresolved reason",
    "shop/web",
    withExtensionRef("backend", { unresolvedReason: "not_found" }),
    consumerOnly,
  ],
];

describe("record shape", () => {
  for (const [name, key, projection, problem] of cases) {
    it(`${problem === undefined ? "accepts" : "refuses"} ${name}`, () => {
      const found = checkRecordShape(key, projection);
      if (problem === undefined) expect(found).toBeUndefined();
      else expect(found).toMatch(problem);
    });

    it(`the decoder ${problem === undefined ? "keeps" : "skips and counts"} ${name}`, () => {
      const log = captureLogger();
      const decoder = createEntryDecoder({ prefix: DEFAULT_STORE_PREFIX, logger: log.logger });
      const value = toBinary(ServiceConfigProjectionSchema, {
        ...projection,
        originCluster: "hub",
      });
      const raw = { key: projectionKey(DEFAULT_STORE_PREFIX, "hub", key), value, modRevision: 3 };
      for (const _ of [1, 2]) {
        const entry = decoder.decodeEntry(raw);
        expect(entry?.service).toBe(problem === undefined ? key : undefined);
      }
      expect(decoder.counters).toEqual({
        decodeErrors: problem === undefined ? 0 : 1,
        invalidKeys: 0,
        restamped: 0,
      });
    });

    it(`the store ${problem === undefined ? "writes" : "refuses to write"} ${name}`, async () => {
      const store = createMemoryStore({ origin: "hub" });
      const write = store.write([{ type: "put", projection }]);
      if (problem === undefined) {
        await write;
        const listed = await store.list({ origin: "hub" });
        expect(listed.entries.map((e) => e.service)).toEqual([key]);
      } else {
        await expect(write).rejects.toThrow(problem);
      }
    });
  }
});
