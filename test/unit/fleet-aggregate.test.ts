/**
 * The fleet view: staleness (either clock), per-cluster merging of
 * replicas, states, skew and drift per service, filters, order and limit,
 * cluster summaries and the metrics numbers.
 */
import { durationMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { FleetState } from "../../gen/aether/registry/v1/fleet_pb.js";
import {
  computeFleetView,
  type FleetInputs,
  fleetResponse,
  type ServiceVersions,
} from "../../services/common/fleet-aggregate.js";
import { fleetMetrics } from "../../services/common/fleet-metrics-snapshot.js";
import { isReplicaStale } from "../../services/common/fleet-replicas.js";
import { ALL_OF_THE_FLEET, type FleetQuery } from "../../services/common/fleet-request.js";
import type { FleetVersion } from "../../services/common/fleet-versions.js";
import {
  agentRejected,
  HEARTBEAT_MS,
  type ReplicaFields,
  rejected,
  replica,
} from "../support/fleet-replicas.js";

const NOW = Date.parse("2026-12-03T12:00:00Z");
const at = (minute: number) => `2026-12-03T11:${String(minute).padStart(2, "0")}:00.000000000Z`;
const hub = (minute: number): FleetVersion => ({ origin: "hub", version: at(minute) });

/** Current versions: service → history minutes (newest first; the first is current). */
function versions(spec: Record<string, number[]>): Map<string, ServiceVersions> {
  return new Map(
    Object.entries(spec).map(([service, minutes]) => [
      service,
      { current: hub(minutes[0] as number), history: minutes.map(hub) },
    ]),
  );
}

function rawView(
  replicas: ReplicaFields[],
  current: Record<string, number[]>,
  query: Partial<FleetQuery> = {},
) {
  const inputs: FleetInputs = {
    replicas: replicas.map(replica),
    nowMs: NOW,
    versions: versions(current),
  };
  return computeFleetView(inputs, { ...ALL_OF_THE_FLEET, ...query });
}

/** The response of {@link rawView}'s view, every service included. */
function view(
  replicas: ReplicaFields[],
  current: Record<string, number[]>,
  query: Partial<FleetQuery> = {},
) {
  return fleetResponse(rawView(replicas, current, query), 1000, NOW, true);
}

const fresh = NOW - 1000;
const served = (minute: number, agents: [number, number, number] = [1, 0, 0]) => ({
  origin: "hub",
  version: at(minute),
  agents,
});

describe("isReplicaStale", () => {
  const limit = 3 * HEARTBEAT_MS;
  it.each([
    { name: "fresh", publishedMs: NOW - 1000, seenAtMs: NOW - 1000, stale: false },
    {
      name: "just within three intervals",
      publishedMs: NOW - limit,
      seenAtMs: NOW - limit,
      stale: false,
    },
    { name: "published too long ago", publishedMs: NOW - limit - 1, seenAtMs: NOW, stale: true },
    {
      name: "not seen to change for too long",
      publishedMs: NOW,
      seenAtMs: NOW - limit - 1,
      stale: true,
    },
    {
      name: "a publish time in the future, not seen lately",
      publishedMs: NOW + 3_600_000,
      seenAtMs: NOW - limit - 1,
      stale: true,
    },
    { name: "no header", publishedMs: undefined, seenAtMs: NOW, stale: true },
  ])("$name: $stale", ({ publishedMs, seenAtMs, stale }) => {
    expect(isReplicaStale(replica({ cluster: "east", publishedMs, seenAtMs }), NOW)).toBe(stale);
  });
});

describe("computeFleetView: one service in one cluster", () => {
  const cases: {
    name: string;
    fields: Partial<ReplicaFields>;
    current?: number[];
    want: FleetState;
    versionsBehind?: number;
  }[] = [
    {
      name: "serves the current version",
      fields: { services: { "shop/cart": served(5) } },
      want: FleetState.IN_SYNC,
    },
    {
      name: "serves an older version",
      fields: { services: { "shop/cart": served(3) } },
      current: [5, 4, 3],
      want: FleetState.BEHIND,
      versionsBehind: 2,
    },
    {
      name: "agents behind",
      fields: { services: { "shop/cart": served(5, [2, 1, 0]) } },
      want: FleetState.BEHIND,
    },
    {
      name: "agents rejecting",
      fields: { services: { "shop/cart": served(5, [2, 0, 1]) } },
      want: FleetState.REJECTING,
    },
    {
      name: "an import rejection of the current version",
      fields: {
        services: {
          "shop/cart": {
            ...served(3),
            importRejections: [rejected("hub", at(5), "bad_signature")],
          },
        },
      },
      want: FleetState.REJECTING,
    },
    {
      name: "an agent rejection of the current version",
      fields: {
        services: {
          "shop/cart": {
            ...served(5),
            agentRejections: [agentRejected("hub", at(5), "invalid", 1)],
          },
        },
      },
      want: FleetState.REJECTING,
    },
    {
      name: "an old import rejection only",
      fields: {
        services: {
          "shop/cart": { ...served(5), importRejections: [rejected("hub", at(1), "rollback")] },
        },
      },
      want: FleetState.IN_SYNC,
    },
    {
      name: "served by another origin",
      fields: { services: { "shop/cart": { ...served(5), origin: "east" } } },
      want: FleetState.BEHIND,
    },
    {
      name: "no current version here: nothing to be behind",
      fields: { services: { "shop/cart": served(3) } },
      current: [],
      want: FleetState.IN_SYNC,
      versionsBehind: 0,
    },
    {
      name: "a stale cluster that served the current version",
      fields: { publishedMs: NOW - 4 * HEARTBEAT_MS, services: { "shop/cart": served(5) } },
      want: FleetState.STALE,
    },
  ];
  it.each(cases)("$name", ({ fields, current, want, versionsBehind }) => {
    const currentSpec: Record<string, number[]> =
      current === undefined
        ? { "shop/cart": [5] }
        : current.length === 0
          ? {}
          : { "shop/cart": current };
    const { services } = view([{ cluster: "east", publishedMs: fresh, ...fields }], currentSpec);
    expect(services.map((s) => [s.service, s.state])).toEqual([["shop/cart", want]]);
    expect(services[0]?.clusters[0]?.state).toBe(want);
    if (versionsBehind !== undefined)
      expect(services[0]?.clusters[0]?.versionsBehind).toBe(versionsBehind);
  });
});

describe("computeFleetView: replicas of one cluster", () => {
  it("merges fresh replicas: the newest version, agents summed, rejections deduplicated", () => {
    const twice = rejected("hub", at(5), "bad_signature");
    const eastReplica = (
      name: string,
      minute: number,
      agents: [number, number, number, number],
    ): ReplicaFields => ({
      cluster: "east",
      replica: name,
      publishedMs: fresh,
      agents,
      services: {
        "shop/cart": {
          ...served(minute, [agents[0], 0, 0]),
          importRejections: [twice],
          agentRejections: [agentRejected("hub", at(5), "x", agents[0])],
        },
      },
    });
    const { services, clusters } = view(
      [eastReplica("a", 4, [1, 0, 0, 1]), eastReplica("b", 5, [2, 0, 0, 0])],
      { "shop/cart": [5] },
    );
    const entry = services[0]?.clusters[0];
    expect(entry?.version).toBe(at(5));
    expect(entry?.agents?.inSync).toBe(3);
    expect(entry?.importRejections).toHaveLength(1);
    expect(entry?.agentRejections.map((r) => r.agents)).toEqual([3]);
    expect(clusters[0]?.agents?.notReady).toBe(1);
    expect(clusters[0]?.replicas).toBe(2);
  });

  it("ignores a stale replica of a fresh cluster, but counts it", () => {
    const { services, clusters } = view(
      [
        { cluster: "east", replica: "a", publishedMs: fresh, services: { "shop/cart": served(4) } },
        {
          cluster: "east",
          replica: "old",
          publishedMs: NOW - 60_000,
          services: { "shop/cart": served(5) },
        },
      ],
      { "shop/cart": [5, 4] },
    );
    expect(services[0]?.clusters[0]?.version).toBe(at(4));
    expect(services[0]?.state).toBe(FleetState.BEHIND);
    expect(clusters[0]?.stale).toBe(false);
    expect(clusters[0]?.replicas).toBe(2);
    expect(timestampMs(clusters[0]?.lastReportTime ?? never())).toBe(fresh);
  });

  it("shows a stale cluster's last values as STALE, never IN_SYNC", () => {
    const { services, clusters } = view(
      [
        {
          cluster: "west",
          publishedMs: NOW - 60_000,
          agents: [3, 0, 0, 0],
          services: { "shop/cart": served(5, [3, 0, 0]) },
        },
      ],
      { "shop/cart": [5] },
    );
    expect(clusters[0]?.stale).toBe(true);
    expect(services[0]?.clusters[0]).toMatchObject({
      stale: true,
      state: FleetState.STALE,
      version: at(5),
    });
    expect(services[0]?.clusters[0]?.agents?.inSync).toBe(3);
    expect(clusters[0]?.servicesInSync).toBe(0);
    // The cluster's totals count fresh replicas only: a stale cluster has no agents to count.
    expect(clusters[0]?.agents?.inSync).toBe(0);
  });
});

function never(): never {
  throw new Error("missing");
}

describe("computeFleetView: across clusters", () => {
  const three = (
    west: Partial<ReplicaFields>,
    more: Partial<ReplicaFields> = {},
  ): ReplicaFields[] => [
    {
      cluster: "east",
      publishedMs: fresh,
      localSource: true,
      services: { "shop/cart": served(5) },
      ...more,
    },
    { cluster: "hub", publishedMs: fresh, localSource: true, services: { "shop/cart": served(5) } },
    {
      cluster: "west",
      publishedMs: fresh,
      localSource: true,
      services: { "shop/cart": served(5) },
      ...west,
    },
  ];

  it("finds the cluster whose local config differs as DRIFTED", () => {
    const { services, clusters } = view(
      three({ services: { "shop/cart": { ...served(5), digest: "bb" } } }),
      { "shop/cart": [5] },
    );
    expect(services[0]?.state).toBe(FleetState.DRIFTED);
    expect(services[0]?.driftedClusters).toEqual(["west"]);
    expect(services[0]?.clusters.map((c) => c.state)).toEqual([
      FleetState.IN_SYNC,
      FleetState.IN_SYNC,
      FleetState.DRIFTED,
    ]);
    expect(clusters.map((c) => c.servicesDrifted)).toEqual([0, 0, 1]);
  });

  it("judges drift only among clusters that read a local source", () => {
    const { services } = view(
      three(
        { localSource: false, services: { "shop/cart": { ...served(5), digest: "" } } },
        { services: { "shop/cart": { ...served(5), digest: "bb" } } },
      ),
      { "shop/cart": [5] },
    );
    // east (bb) and hub (empty) tie: the empty digest is the baseline.
    expect(services[0]?.driftedClusters).toEqual(["east"]);
  });

  it("measures skew over fresh clusters, in versions and time", () => {
    const { services, clusters } = view(
      three({ services: { "shop/cart": served(2) } }, { services: { "shop/cart": served(4) } }),
      { "shop/cart": [5, 4, 3, 2] },
    );
    const s = services[0];
    expect(s?.skewVersions).toBe(3);
    expect(durationMs(s?.skew ?? never())).toBe(3 * 60_000);
    expect(clusters.map((c) => durationMs(c.behindFor ?? never()))).toEqual([
      NOW - Date.parse(at(5)),
      0,
      NOW - Date.parse(at(5)),
    ]);
    expect(s?.clusters.map((c) => durationMs(c.age ?? never()))).toEqual([
      NOW - Date.parse(at(4)),
      NOW - Date.parse(at(5)),
      NOW - Date.parse(at(2)),
    ]);
  });

  it("leaves a stale cluster out of the skew", () => {
    const { services } = view(
      three({ publishedMs: NOW - 60_000, services: { "shop/cart": served(2) } }),
      { "shop/cart": [5, 2] },
    );
    expect(services[0]?.state).toBe(FleetState.STALE);
    expect(services[0]?.skewVersions).toBe(0);
    expect(durationMs(services[0]?.skew ?? never())).toBe(0);
  });

  it("reports a current version no cluster serves as BEHIND, with no cluster entries", () => {
    const { services } = view(three({}), { "shop/cart": [5], "shop/new": [6] });
    expect(services.map((s) => [s.service, s.state, s.clusters.length])).toEqual([
      ["shop/new", FleetState.BEHIND, 0],
      ["shop/cart", FleetState.IN_SYNC, 3],
    ]);
  });
});

describe("computeFleetView: filters, order, limit", () => {
  const fleet: ReplicaFields[] = [
    {
      cluster: "east",
      publishedMs: fresh,
      services: {
        "a/ok": served(5),
        "b/behind1": served(4),
        "c/behind3": served(2),
        "d/rejects": {
          ...served(5, [0, 0, 1]),
          agentRejections: [agentRejected("hub", at(5), "invalid", 1)],
          importRejections: [rejected("east", at(1), "untrusted")],
        },
      },
    },
    {
      cluster: "west",
      publishedMs: NOW - 60_000,
      services: { "e/stale": served(5), "f/west-only": served(5) },
    },
  ];
  const current = {
    "a/ok": [5],
    "b/behind1": [5, 4],
    "c/behind3": [5, 4, 3, 2],
    "d/rejects": [5],
    "e/stale": [5],
  };

  it("sorts worst first: state, then skew, then name", () => {
    expect(view(fleet, current).services.map((s) => s.service)).toEqual([
      "e/stale",
      "f/west-only",
      "d/rejects",
      "c/behind3",
      "b/behind1",
      "a/ok",
    ]);
  });

  it.each([
    {
      name: "services",
      query: { services: new Set(["a/ok", "c/behind3", "x/none"]) },
      want: ["c/behind3", "a/ok"],
    },
    {
      name: "states",
      query: { states: new Set([FleetState.BEHIND, FleetState.IN_SYNC]) },
      want: ["c/behind3", "b/behind1", "a/ok"],
    },
    {
      name: "clusters",
      query: { clusters: new Set(["west"]), states: new Set([FleetState.STALE]) },
      want: ["e/stale", "f/west-only"],
    },
  ])("filters by $name", ({ query, want }) => {
    expect(view(fleet, current, query).services.map((s) => s.service)).toEqual(want);
  });

  it("a cluster filter selects the clusters and their entries", () => {
    const result = view(fleet, current, { clusters: new Set(["east"]) });
    expect(result.clusters.map((c) => c.cluster)).toEqual(["east"]);
    // e/stale has a current version but east does not report it: nobody known to serve it.
    expect(result.services.map((s) => [s.service, s.state])).toContainEqual([
      "e/stale",
      FleetState.BEHIND,
    ]);
    expect(result.services.map((s) => s.service)).not.toContain("f/west-only");
  });

  it("counts the matching services before the limit", () => {
    const response = fleetResponse(rawView(fleet, current), 2, NOW, true);
    expect(response.services.map((s) => s.service)).toEqual(["e/stale", "f/west-only"]);
    expect(response.matchingServices).toBe(6);
    expect(response.clusters.map((c) => c.cluster)).toEqual(["east", "west"]);
    expect(timestampMs(response.time ?? never())).toBe(NOW);
  });

  it("gives the metrics per cluster and the largest skew", () => {
    const metrics = fleetMetrics(rawView(fleet, current));
    expect(metrics.maxSkewSeconds).toBe(180);
    expect(metrics.clusters).toEqual([
      {
        cluster: "east",
        stale: false,
        behindSeconds: (NOW - Date.parse(at(5))) / 1000,
        services: { in_sync: 1, behind: 2, rejecting: 1, drifted: 0 },
        agents: { in_sync: 0, behind: 0, rejecting: 0, not_ready: 0 },
        rejections: 2,
        lastReportSeconds: fresh / 1000,
      },
      {
        cluster: "west",
        stale: true,
        behindSeconds: 0,
        services: { in_sync: 0, behind: 0, rejecting: 0, drifted: 0 },
        agents: { in_sync: 0, behind: 0, rejecting: 0, not_ready: 0 },
        rejections: 0,
        lastReportSeconds: (NOW - 60_000) / 1000,
      },
    ]);
  });
});
