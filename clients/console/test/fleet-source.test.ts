/**
 * Where the fleet view's data comes from, with a fake client: GetFleetStatus
 * with the filters the server applies; on Unimplemented, every page of
 * ListAllConfig (ALL_ORIGINS) and GetConfigStatus; other errors reject.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  ConfigView,
  GetConfigStatusResponseSchema,
  type ListAllConfigRequest,
  ListAllConfigResponseSchema,
} from "../../../gen/aether/registry/v1/config_service_pb.js";
import {
  FleetState,
  type GetFleetStatusRequest,
} from "../../../gen/aether/registry/v1/fleet_pb.js";
import type { ConfigClient } from "../src/api.js";
import { NO_FILTERS } from "../src/views/fleet/fleet-filters.js";
import { loadFleet } from "../src/views/fleet/fleet-source.js";
import { fleetAnswer, V1, V2 } from "./fleet-fixtures.js";

/** A client whose GetFleetStatus answers or throws `fleet`, with two pages of stored projections. */
function fakeClient(fleet: "answer" | Code) {
  const calls: string[] = [];
  const pages = [
    {
      projections: [{ service: "shop/cart", originCluster: "hub", version: V2 }],
      nextPageToken: "p2",
    },
    {
      projections: [{ service: "shop/cart", originCluster: "east", version: V1 }],
      nextPageToken: "",
    },
  ];
  const client = {
    async getFleetStatus(request: GetFleetStatusRequest) {
      calls.push(`fleet ${request.clusters} ${request.states} ${request.limit}`);
      if (fleet !== "answer") throw new ConnectError("no", fleet);
      return fleetAnswer();
    },
    async listAllConfig(request: ListAllConfigRequest) {
      calls.push(
        `list ${ConfigView[request.view]} ${request.pageSize} ${request.pageToken || "-"}`,
      );
      return create(ListAllConfigResponseSchema, pages[request.pageToken === "" ? 0 : 1]);
    },
    async getConfigStatus() {
      calls.push("status");
      return create(GetConfigStatusResponseSchema, {
        origins: [
          { origin: "east", trusted: true },
          { origin: "hub", trusted: true },
        ],
      });
    },
  };
  return { client: client as unknown as ConfigClient, calls };
}

const signal = new AbortController().signal;

describe("loadFleet", () => {
  it("asks GetFleetStatus with the cluster and state filters at limit 1000", async () => {
    const { client, calls } = fakeClient("answer");
    const filters = { ...NO_FILTERS, cluster: "east", state: "behind" as const, q: "cart" };
    const snapshot = await loadFleet(client, filters, signal, false);
    expect(snapshot.source).toBe("fleet");
    expect(calls).toEqual([`fleet east ${FleetState.BEHIND} 1000`]);
  });

  it("falls back to every page of the stored projections and the status on Unimplemented", async () => {
    const { client, calls } = fakeClient(Code.Unimplemented);
    const snapshot = await loadFleet(client, NO_FILTERS, signal, false);
    expect(snapshot.source).toBe("origins");
    expect(calls.sort()).toEqual([
      "fleet   1000",
      "list ALL_ORIGINS 1000 -",
      "list ALL_ORIGINS 1000 p2",
      "status",
    ]);
    expect(
      snapshot.response.services[0]?.clusters.map((c) => [c.cluster, FleetState[c.state]]),
    ).toEqual([
      ["east", "BEHIND"],
      ["hub", "IN_SYNC"],
    ]);
  });

  it("skips GetFleetStatus once it is known missing, and rejects on other errors", async () => {
    const missing = fakeClient(Code.Unimplemented);
    await loadFleet(missing.client, NO_FILTERS, signal, true);
    expect(missing.calls.some((c) => c.startsWith("fleet"))).toBe(false);
    const down = fakeClient(Code.Unavailable);
    await expect(loadFleet(down.client, NO_FILTERS, signal, false)).rejects.toThrow(/no/);
    expect(down.calls).toEqual(["fleet   1000"]);
  });
});
