/**
 * `aetherctl fleet`: its flags (repeatable filters, states by name, the
 * limit's range) and its table (cluster summary, services worst first with a
 * cell per cluster, rejections on continuation lines).
 */
import { create } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { parseAetherctlFlags } from "../../clients/aetherctl/aetherctl-flags.js";
import { formatFleet, serviceClusterCell } from "../../clients/aetherctl/fleet-format.js";
import {
  FleetServiceClusterSchema,
  FleetState,
  GetFleetStatusResponseSchema,
} from "../../gen/aether/registry/v1/fleet_pb.js";
import { UsageError } from "../../services/process/usage-error.js";
import { agentRejected, rejected } from "../support/fleet-replicas.js";

const command = (argv: string[]) => {
  const line = parseAetherctlFlags(argv, {});
  if (line.kind !== "run") throw new Error("expected a command");
  return line.command;
};

describe("aetherctl fleet: flags", () => {
  it.each([
    { argv: ["fleet"], want: { services: [], clusters: [], states: [], limit: 0 } },
    {
      argv: ["fleet", "--service", "shop/cart", "--service", "@mesh", "--cluster", "east"],
      want: { services: ["shop/cart", "@mesh"], clusters: ["east"], states: [], limit: 0 },
    },
    {
      argv: ["fleet", "--state", "behind", "--state", "stale", "--limit", "5", "-o", "json"],
      want: {
        services: [],
        clusters: [],
        states: [FleetState.BEHIND, FleetState.STALE],
        limit: 5,
      },
    },
  ])("$argv", ({ argv, want }) => {
    expect(command(argv)).toEqual({ name: "fleet", ...want });
  });

  it.each([
    { argv: ["fleet", "shop/cart"], message: /takes no arguments.*--service/ },
    { argv: ["fleet", "--service", "cart"], message: /--service: service "cart"/ },
    { argv: ["fleet", "--cluster", "East"], message: /--cluster: cluster name "East"/ },
    { argv: ["fleet", "--cluster", "e", "--cluster", "e"], message: /--cluster e is given twice/ },
    { argv: ["fleet", "--state", "late"], message: /--state: "late" is not one of in_sync/ },
    { argv: ["fleet", "--limit", "0"], message: /--limit "0" must be a number from 1 to 1000/ },
    { argv: ["fleet", "--limit", "1001"], message: /--limit "1001"/ },
    { argv: ["fleet", "--limit", "x"], message: /--limit "x"/ },
  ])("refuses $argv", ({ argv, message }) => {
    let error: unknown;
    try {
      parseAetherctlFlags(argv, {});
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).message).toMatch(message);
    expect((error as UsageError).command).toBe("fleet");
  });
});

const NOW = Date.parse("2026-12-03T12:00:00Z");
const V = "2026-12-03T11:55:00.000000000Z";
const OLD = "2026-12-03T11:50:00.000000000Z";

const cell = (fields: Parameters<typeof create<typeof FleetServiceClusterSchema>>[1]) =>
  create(FleetServiceClusterSchema, fields);

describe("aetherctl fleet: cells", () => {
  it.each([
    {
      fields: { cluster: "east", state: FleetState.IN_SYNC, agents: { inSync: 3 } },
      want: "east:in_sync 3/3",
    },
    {
      fields: {
        cluster: "west",
        state: FleetState.BEHIND,
        versionsBehind: 2,
        agents: { inSync: 1, behind: 2 },
      },
      want: "west:behind -2v 1/3",
    },
    { fields: { cluster: "west", state: FleetState.DRIFTED }, want: "west:drifted" },
    { fields: { cluster: "north", state: FleetState.STALE, stale: true }, want: "north:stale" },
  ])("$want", ({ fields, want }) => {
    expect(serviceClusterCell(cell(fields))).toBe(want);
  });
});

describe("aetherctl fleet: table", () => {
  const response = create(GetFleetStatusResponseSchema, {
    time: timestampFromMs(NOW),
    synced: true,
    matchingServices: 3,
    clusters: [
      {
        cluster: "east",
        replicas: 2,
        agents: { inSync: 3, notReady: 1 },
        servicesInSync: 1,
        servicesRejecting: 1,
        lastReportTime: timestampFromMs(NOW - 2000),
        behindFor: durationFromMs(0),
      },
      {
        cluster: "west",
        stale: true,
        replicas: 1,
        lastReportTime: timestampFromMs(NOW - 300_000),
        behindFor: durationFromMs(0),
      },
    ],
    services: [
      {
        service: "shop/cart",
        originCluster: "hub",
        version: V,
        state: FleetState.REJECTING,
        skewVersions: 1,
        skew: durationFromMs(300_000),
        clusters: [
          {
            cluster: "east",
            state: FleetState.REJECTING,
            version: OLD,
            versionsBehind: 1,
            importRejections: [rejected("hub", V, "bad_signature")],
            agentRejections: [agentRejected("hub", V, "invalid_route", 2)],
          },
        ],
      },
      { service: "shop/new", originCluster: "hub", version: V, state: FleetState.BEHIND },
    ],
  });

  it("prints the clusters, then the services with their rejections under them", () => {
    expect(formatFleet(response)).toBe(
      [
        "fleet at 2026-12-03T12:00:00.000Z",
        "",
        "CLUSTER  STALE  REPLICAS  AGENTS                  SERVICES                BEHIND FOR  LAST REPORT",
        "east     no     2         3 in_sync, 1 not_ready  1 in_sync, 1 rejecting  -           2s ago",
        "west     yes    1         -                       -                       -           5m ago",
        "",
        "services: 2 of 3, worst first (--limit, --state or --service for others)",
        "SERVICE    ORIGIN  VERSION                         STATE      SKEW   CLUSTERS",
        `shop/cart  hub     ${V}  rejecting  1v 5m  east:rejecting -1v`,
        `    east rejects hub@${V}: bad_signature: bad_signature of hub@${V}`,
        `    east: 2 agents reject hub@${V}: invalid_route: invalid_route of hub@${V}`,
        `shop/new   hub     ${V}  behind     -      (no cluster reports it)`,
        "",
      ].join("\n"),
    );
  });

  it("says when this registrar is not synced and when no cluster publishes", () => {
    const text = formatFleet(create(GetFleetStatusResponseSchema, { time: timestampFromMs(NOW) }));
    expect(text).toContain("(this registrar is not synced with the store");
    expect(text).toContain("clusters: none publishes its import status");
    expect(text).toContain("services: 0\n");
  });
});
