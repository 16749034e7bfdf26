/**
 * The fleet summary condition on an exported route's parent entry: its
 * status and reason by priority, and a message that counts the clusters
 * serving the current version and names the others.
 */
import { describe, expect, it } from "vitest";
import {
  FLEET_CONDITION_TYPE,
  type FleetClusterSummary,
  fleetCondition,
} from "../../services/common/fleet-condition.js";

const V = "2026-12-03T10:00:00.000000000Z";
const OLD = "2026-12-03T09:00:00.000000000Z";

const at = (
  cluster: string,
  state: FleetClusterSummary["state"],
  version = V,
  reasons: string[] = [],
): FleetClusterSummary => ({ cluster, state, version, reasons });

describe("fleet condition", () => {
  it.each([
    {
      name: "every cluster in sync",
      clusters: [at("east", "in_sync"), at("hub", "in_sync"), at("west", "in_sync")],
      want: ["True", "InSync", `all 3 clusters serve version ${V}`],
    },
    {
      name: "drift is in sync, named",
      clusters: [at("east", "in_sync"), at("west", "drifted")],
      want: ["True", "InSync", `all 2 clusters serve version ${V}; local config differs in: west`],
    },
    {
      name: "a rejection wins over everything",
      clusters: [
        at("east", "behind", OLD),
        at("west", "rejecting", OLD, ["untrusted_origin"]),
        at("north", "stale", OLD),
        at("hub", "in_sync"),
      ],
      want: [
        "False",
        "Rejected",
        `1 of 4 clusters serve version ${V}; rejected by west (untrusted_origin); behind: east; not reporting: north`,
      ],
    },
    {
      name: "a cluster serving the version with agents behind is behind but counted as serving",
      clusters: [at("east", "behind"), at("west", "in_sync")],
      want: ["False", "Propagating", `all 2 clusters serve version ${V}; behind: east`],
    },
    {
      name: "stale but otherwise in sync is unknown, and a stale cluster never counts as serving",
      clusters: [at("east", "in_sync"), at("west", "stale")],
      want: ["Unknown", "ClustersStale", `1 of 2 clusters serve version ${V}; not reporting: west`],
    },
    {
      name: "one cluster is named",
      clusters: [at("hub", "in_sync")],
      want: ["True", "InSync", `hub serves version ${V}`],
    },
    {
      name: "one cluster behind is named too",
      clusters: [at("hub", "behind", OLD)],
      want: ["False", "Propagating", `hub does not serve version ${V}; behind: hub`],
    },
    {
      name: "long lists are cut",
      clusters: ["a", "b", "c", "d", "e", "f", "g"].map((c) => at(c, "behind", OLD)),
      want: [
        "False",
        "Propagating",
        `0 of 7 clusters serve version ${V}; behind: a, b, c, d, e and 2 more`,
      ],
    },
  ])("$name", ({ clusters, want }) => {
    const condition = fleetCondition("shop/cart", { version: V, clusters });
    expect([condition.status, condition.reason, condition.message]).toEqual(want);
    expect(condition.type).toBe(FLEET_CONDITION_TYPE);
  });

  it.each([undefined, { version: V, clusters: [] }])(
    "is pending without reports (%j)",
    (summary) => {
      expect(fleetCondition("shop/cart", summary)).toEqual({
        type: FLEET_CONDITION_TYPE,
        status: "Unknown",
        reason: "Pending",
        message: "no cluster reports Service shop/cart yet",
      });
    },
  );
});
