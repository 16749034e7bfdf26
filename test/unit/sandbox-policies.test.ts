/**
 * The sandbox banner's policy lines, from hand-built route tables: the first
 * service carrying each kind (agents in order), the mesh defaults only when
 * a table has them (the origin's, or `local`), nothing at all for tables
 * that carry none of it.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import { mergeRouteTable } from "../../services/common/route-merge.js";
import { policyLines } from "../../services/sandbox/sandbox-policies.js";
import { makeProjection, meshRecord } from "../support/projections.js";

const plain = makeProjection("shop/a", { origin: "hub" });
const named = create(ServiceConfigProjectionSchema, {
  service: "shop/b",
  originCluster: "hub",
  routes: makeProjection("shop/b").routes,
  virtualHosts: [{ hostnames: ["b.example"], namespace: "shop", name: "b-names" }],
  backendTls: [{ port: 8443, hostname: "b.shop.example" }],
});
const mesh = meshRecord({
  requestTimeout: { seconds: 15n },
  retry: { codes: [503], attempts: 2 },
  retryBudget: { percent: 20 },
  outlierDetection: { consecutive5xxErrors: 5 },
});

function tableOf(projections: (typeof plain)[], withMesh: boolean) {
  const imported = new Map(
    projections.map((p) => [p.service, { origin: "hub", service: p.service, projection: p }]),
  );
  if (withMesh) imported.set("@mesh", { origin: "hub", service: "@mesh", projection: mesh });
  return mergeRouteTable({
    dependencies: projections.map((p) => p.service),
    local: new Map(),
    imported,
    cluster: "east",
  });
}

describe("sandbox banner: policy lines", () => {
  it("names the first service of each kind and the mesh defaults", () => {
    expect(
      policyLines([
        { cluster: "east", table: tableOf([plain], false) },
        { cluster: "west", table: tableOf([plain, named], true) },
      ]),
    ).toEqual([
      "policies on the channel, as the agents' /routes carry them (one example each)",
      "  backend tls    shop/b (west): SNI b.shop.example on port 8443",
      "  virtual hosts  shop/b (west): b.example",
      "  mesh defaults  hub's MeshConfig default (west): request timeout 15s, retry codes 503, 2 attempts, retry budget 20%, outlier detection after 5 5xx",
    ]);
  });

  it("prints nothing for tables that carry none of it", () => {
    expect(policyLines([{ cluster: "east", table: tableOf([plain], false) }])).toEqual([]);
    expect(policyLines([{ cluster: "east", table: undefined }])).toEqual([]);
  });
});
