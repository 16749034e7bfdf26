/**
 * The fleet condition's input from a FleetService: states mapped, reasons
 * of a rejecting cluster deduplicated from its registrar's and agents'
 * rejections, none for the others, an unspecified state never in sync.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { FleetServiceSchema, FleetState } from "../../gen/aether/registry/v1/fleet_pb.js";
import { fleetSummaryOf } from "../../services/common/fleet-summary.js";

const V = "2026-12-03T10:00:00.000000000Z";
const refused = (reason: string) => ({ originCluster: "hub", version: V, reason, message: "m" });

describe("fleet summary of a FleetService", () => {
  it("maps each cluster's state, version and rejection reasons", () => {
    const service = create(FleetServiceSchema, {
      service: "shop/cart",
      version: V,
      clusters: [
        {
          cluster: "east",
          state: FleetState.REJECTING,
          version: V,
          importRejections: [refused("untrusted_origin")],
          agentRejections: [
            { rejection: refused("bad_signature"), agents: 2 },
            { rejection: refused("untrusted_origin"), agents: 1 },
          ],
        },
        { cluster: "hub", state: FleetState.IN_SYNC, version: V },
        { cluster: "north", state: FleetState.UNSPECIFIED, version: V },
        {
          cluster: "west",
          state: FleetState.DRIFTED,
          version: V,
          importRejections: [refused("untrusted_origin")],
        },
      ],
    });
    expect(fleetSummaryOf(service)).toEqual({
      version: V,
      clusters: [
        {
          cluster: "east",
          state: "rejecting",
          version: V,
          reasons: ["untrusted_origin", "bad_signature"],
        },
        { cluster: "hub", state: "in_sync", version: V, reasons: [] },
        { cluster: "north", state: "behind", version: V, reasons: [] },
        { cluster: "west", state: "drifted", version: V, reasons: [] },
      ],
    });
  });
});
