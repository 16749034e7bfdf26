/** The fallback for a registrar without GetFleetStatus: stored projections and status as one column per origin. */
import { create } from "@bufbuild/protobuf";
import { durationMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { GetConfigStatusResponseSchema } from "../../../gen/aether/registry/v1/config_service_pb.js";
import { FleetState } from "../../../gen/aether/registry/v1/fleet_pb.js";
import { originsAsFleet } from "../src/views/fleet/fleet-fallback.js";
import { NOW_MS, V1, V2 } from "./fleet-fixtures.js";

const status = create(GetConfigStatusResponseSchema, {
  synced: true,
  origins: [
    { origin: "east", trusted: true },
    { origin: "hub", trusted: true },
    { origin: "rogue", trusted: false },
  ],
  rejections: [
    {
      service: "shop/cart",
      originCluster: "rogue",
      reason: "untrusted_origin",
      message: "not trusted",
    },
  ],
});
const stored = [
  { service: "shop/cart", originCluster: "hub", version: V2 },
  { service: "shop/cart", originCluster: "east", version: V1 },
  { service: "shop/cart", originCluster: "rogue", version: "2026-12-03T11:59:59Z" },
  { service: "web/frontend", originCluster: "hub", version: V1 },
];

const cellsOf = (s: { clusters: { cluster: string; state: FleetState }[] } | undefined) =>
  s?.clusters.map((c) => [c.cluster, FleetState[c.state]]);

describe("originsAsFleet", () => {
  it("makes one column per origin, the newest trusted version the winner, an older one behind, a refused one rejecting with its reason", () => {
    const answer = originsAsFleet(stored, status, NOW_MS);
    expect(
      answer.clusters.map((c) => [
        c.cluster,
        c.servicesInSync,
        c.servicesBehind,
        c.servicesRejecting,
      ]),
    ).toEqual([
      ["east", 0, 1, 0],
      ["hub", 2, 0, 0],
      ["rogue", 0, 0, 1],
    ]);
    const [cart, frontend] = answer.services;
    expect(cart).toMatchObject({
      service: "shop/cart",
      originCluster: "hub",
      version: V2,
      state: FleetState.REJECTING,
    });
    expect(cellsOf(cart)).toEqual([
      ["east", "BEHIND"],
      ["hub", "IN_SYNC"],
      ["rogue", "REJECTING"],
    ]);
    expect(cart?.clusters[2]?.importRejections[0]).toMatchObject({
      reason: "untrusted_origin",
      version: "2026-12-03T11:59:59Z",
    });
    expect([
      cart?.skewVersions,
      durationMs(cart?.skew ?? ({ seconds: 0n, nanos: 0 } as never)),
    ]).toEqual([1, 30_123]);
    expect(frontend).toMatchObject({
      service: "web/frontend",
      state: FleetState.IN_SYNC,
      skewVersions: 0,
    });
    expect(answer.matchingServices).toBe(2);
  });

  it("breaks a tie of versions by origin name", () => {
    const tie = [
      { service: "a/b", originCluster: "hub", version: V2 },
      { service: "a/b", originCluster: "east", version: V2 },
    ];
    expect(originsAsFleet(tie, status, NOW_MS).services[0]?.originCluster).toBe("east");
  });

  it("applies the cluster and state filters like the RPC", () => {
    const hubOnly = originsAsFleet(stored, status, NOW_MS, { cluster: "hub", state: "" });
    expect(hubOnly.clusters.map((c) => c.cluster)).toEqual(["hub"]);
    expect(hubOnly.services.map((s) => [s.service, FleetState[s.state]])).toEqual([
      ["shop/cart", "IN_SYNC"],
      ["web/frontend", "IN_SYNC"],
    ]);
    const rejecting = originsAsFleet(stored, status, NOW_MS, { cluster: "", state: "rejecting" });
    expect(rejecting.services.map((s) => s.service)).toEqual(["shop/cart"]);
  });
});
