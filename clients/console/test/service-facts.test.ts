/**
 * The Service view's header facts, rejections and history rows, from real
 * messages (GetConfigStatus, GetFleetStatus, projections with and without
 * signatures).
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { GetConfigStatusResponseSchema } from "../../../gen/aether/registry/v1/config_service_pb.js";
import { GetFleetStatusResponseSchema } from "../../../gen/aether/registry/v1/fleet_pb.js";
import {
  ServiceConfigProjectionSchema,
  SignatureAlgorithm,
} from "../../../gen/aether/registry/v1/projection_pb.js";
import { exportTime, headerFacts } from "../src/views/service/service-facts.js";
import { historyRows } from "../src/views/service/service-history.js";
import { gatherRejections } from "../src/views/service/service-rejections.js";

const status = create(GetConfigStatusResponseSchema, {
  cluster: "spoke",
  origins: [
    { origin: "hub", projections: 4, signedProjections: 3, trusted: true },
    { origin: "west", projections: 1, trusted: false },
  ],
  rejections: [
    {
      service: "shop/cart",
      originCluster: "west",
      reason: "untrusted_origin",
      message: "not trusted",
    },
    { service: "shop/other", originCluster: "west", reason: "untrusted_origin", message: "x" },
  ],
  conflicts: [
    { service: "shop/cart", winnerOrigin: "hub", winnerVersion: "v9", loserOrigins: ["east"] },
  ],
});

const fleet = create(GetFleetStatusResponseSchema, {
  services: [
    {
      service: "shop/cart",
      clusters: [
        {
          cluster: "west",
          agentRejections: [
            {
              agents: 3,
              rejection: {
                originCluster: "hub",
                version: "v9",
                reason: "bad_signature",
                message: "bad",
              },
            },
          ],
        },
        {
          cluster: "spoke",
          importRejections: [
            { originCluster: "west", version: "v3", reason: "untrusted_origin", message: "dup" },
          ],
        },
        {
          cluster: "east",
          importRejections: [
            { originCluster: "hub", version: "v9", reason: "rollback", message: "older" },
          ],
        },
      ],
    },
  ],
});

describe("headerFacts", () => {
  it.each([
    {
      name: "signed by a trusted origin",
      projection: {
        originCluster: "hub",
        version: "2026-11-01T00:00:00.5Z",
        signature: {
          keyId: "k1",
          algorithm: SignatureAlgorithm.ED25519,
          signature: new Uint8Array([1]),
        },
      },
      want: {
        origin: "hub",
        signed: true,
        signature: "signed by key k1 (ed25519)",
        trust: "trusted",
        originSigning: "3 of 4 projections of hub signed",
        exportedAt: Date.parse("2026-11-01T00:00:00.500Z"),
      },
    },
    {
      name: "unsigned from an untrusted origin",
      projection: { originCluster: "west", version: "2026-11-01T00:00:00Z" },
      want: {
        signed: false,
        signature: "unsigned",
        trust: "untrusted",
        originSigning: "0 of 1 projections of west signed",
      },
    },
    {
      name: "an origin the status does not list, a version that is no time",
      projection: { originCluster: "", version: "v7" },
      want: { origin: "(none)", trust: "unknown", originSigning: "", exportedAt: undefined },
    },
  ])("$name", ({ projection, want }) => {
    const facts = headerFacts(
      create(ServiceConfigProjectionSchema, { service: "shop/cart", ...projection }),
      status,
    );
    expect(facts).toMatchObject(want);
  });

  it("knows no trust before GetConfigStatus answered", () => {
    const facts = headerFacts(
      create(ServiceConfigProjectionSchema, { originCluster: "hub" }),
      undefined,
    );
    expect(facts.trust).toBe("unknown");
  });

  it.each([
    ["2026-11-01T00:00:00Z", Date.parse("2026-11-01T00:00:00Z")],
    ["2026-11-01T01:00:00.123456789+01:00", Date.parse("2026-11-01T00:00:00.123Z")],
    ["yesterday", undefined],
  ])("reads the export time of %s", (version, want) => {
    expect(exportTime(version)).toBe(want);
  });
});

describe("gatherRejections", () => {
  it("lists this registrar's rejections and conflicts, then each other cluster's, by cluster", () => {
    expect(gatherRejections("shop/cart", status, fleet)).toEqual([
      {
        where: "registrar of spoke (this one)",
        origin: "west",
        version: "",
        reason: "untrusted_origin",
        message: "not trusted",
      },
      {
        where: "registrar of spoke (this one)",
        origin: "east",
        version: "",
        reason: "conflict",
        message: "also exported by east; hub wins with v9",
      },
      {
        where: "registrar of east",
        origin: "hub",
        version: "v9",
        reason: "rollback",
        message: "older",
      },
      {
        where: "3 agents in west",
        origin: "hub",
        version: "v9",
        reason: "bad_signature",
        message: "bad",
      },
    ]);
  });

  it("lists every cluster's import rejections while GetConfigStatus has not answered", () => {
    const rows = gatherRejections("shop/cart", undefined, fleet);
    expect(rows.map((row) => row.where)).toEqual([
      "registrar of east",
      "registrar of spoke",
      "3 agents in west",
    ]);
  });

  it.each([
    { service: "shop/none", answered: true },
    { service: "shop/cart", answered: false },
  ])("finds none for $service (status and fleet answered: $answered)", ({ service, answered }) => {
    const rows = gatherRejections(
      service,
      answered ? status : undefined,
      answered ? fleet : undefined,
    );
    expect(rows).toEqual([]);
  });
});

describe("historyRows", () => {
  const seen = [
    { version: "v1", origin: "hub", receivedAt: 1, revision: 1n },
    { version: "v2", origin: "hub", receivedAt: 2, revision: 2n },
    { version: "v2", origin: "west", receivedAt: 3, revision: 3n },
  ];
  it.each([
    { version: "v2", origin: "hub", marked: [false, true, false] },
    { version: "v2", origin: "west", marked: [true, false, false] },
    { version: "v9", origin: "hub", marked: [false, false, false] },
  ])("newest first, marks $origin $version", ({ version, origin, marked }) => {
    const rows = historyRows(seen, version, origin);
    expect(rows.map((row) => row.receivedAt)).toEqual([3, 2, 1]);
    expect(rows.map((row) => row.current)).toEqual(marked);
  });
});
