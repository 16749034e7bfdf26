import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import { createImportPolicy, type ImportCandidate } from "../../services/common/import-policy.js";

function candidate(
  origin: string,
  service: string,
  version: string,
  claimed = service,
): ImportCandidate {
  return {
    origin,
    service,
    projection: create(ServiceConfigProjectionSchema, {
      service: claimed,
      originCluster: origin,
      version,
    }),
  };
}

const T1 = "2026-11-01T10:00:00.000000001Z";
const T2 = "2026-11-01T10:00:00.000000002Z";

describe("import policy: trust", () => {
  const cases: {
    name: string;
    controlCluster?: string;
    input: ImportCandidate;
    reason?: string;
  }[] = [
    { name: "federated trusts any origin", input: candidate("east", "ns/a", T1) },
    {
      name: "empty control cluster is federated",
      controlCluster: "",
      input: candidate("east", "ns/a", T1),
    },
    {
      name: "control cluster trusts itself",
      controlCluster: "hub",
      input: candidate("hub", "ns/a", T1),
    },
    {
      name: "control cluster rejects a spoke",
      controlCluster: "hub",
      input: candidate("spoke", "ns/a", T2),
      reason: "untrusted_origin",
    },
    {
      name: "bad version",
      input: candidate("hub", "ns/a", "yesterday"),
      reason: "invalid_version",
    },
    { name: "empty version", input: candidate("hub", "ns/a", ""), reason: "invalid_version" },
    { name: "bad service key", input: candidate("hub", "a", T1, "a"), reason: "invalid_service" },
    {
      name: "upper-case service key",
      input: candidate("hub", "NS/a", T1, "NS/a"),
      reason: "invalid_service",
    },
    { name: "the mesh record is a valid key", input: candidate("hub", "@mesh", T1) },
    {
      name: "a key like the mesh record's is not",
      input: candidate("hub", "@mesh2", T1),
      reason: "invalid_service",
    },
    {
      name: "control cluster rejects a spoke's mesh record",
      controlCluster: "hub",
      input: candidate("spoke", "@mesh", T1),
      reason: "untrusted_origin",
    },
    {
      name: "a mesh record stored as a service",
      input: candidate("hub", "ns/a", T1, "@mesh"),
      reason: "service_mismatch",
    },
    {
      name: "value names another service",
      input: candidate("hub", "ns/a", T1, "ns/b"),
      reason: "service_mismatch",
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const policy = createImportPolicy({ controlCluster: c.controlCluster });
      expect(policy.check(c.input)?.reason).toBe(c.reason);
    });
  }
});

describe("import policy: conflicts", () => {
  const cases: {
    name: string;
    controlCluster?: string;
    input: ImportCandidate[];
    winners: Record<string, string>;
    conflicts: string[];
    rejected: number;
  }[] = [
    {
      name: "highest version wins",
      input: [candidate("a", "ns/s", T1), candidate("b", "ns/s", T2)],
      winners: { "ns/s": "b" },
      conflicts: ["ns/s"],
      rejected: 0,
    },
    {
      name: "equal versions: smallest origin name wins",
      input: [candidate("zeta", "ns/s", T1), candidate("alpha", "ns/s", T1)],
      winners: { "ns/s": "alpha" },
      conflicts: ["ns/s"],
      rejected: 0,
    },
    {
      name: "same instant in another offset is a tie",
      input: [
        candidate("b", "ns/s", "2026-11-01T11:00:00+01:00"),
        candidate("a", "ns/s", "2026-11-01T10:00:00Z"),
      ],
      winners: { "ns/s": "a" },
      conflicts: ["ns/s"],
      rejected: 0,
    },
    {
      name: "version compared as instants, not strings",
      input: [
        candidate("a", "ns/s", "2026-11-01T10:00:00.9Z"),
        candidate("b", "ns/s", "2026-11-01T10:00:00.10Z"),
      ],
      winners: { "ns/s": "a" },
      conflicts: ["ns/s"],
      rejected: 0,
    },
    {
      name: "control cluster: newer spoke projection is rejected, hub wins",
      controlCluster: "hub",
      input: [candidate("hub", "ns/s", T1), candidate("spoke", "ns/s", T2)],
      winners: { "ns/s": "hub" },
      conflicts: [],
      rejected: 1,
    },
    {
      name: "an untrusted-only service has no winner",
      controlCluster: "hub",
      input: [candidate("spoke", "ns/only-spoke", T2), candidate("hub", "ns/s", T1)],
      winners: { "ns/s": "hub" },
      conflicts: [],
      rejected: 1,
    },
    {
      name: "invalid candidate never wins even when newest",
      input: [candidate("a", "ns/s", T1), candidate("b", "ns/s", "not-a-time")],
      winners: { "ns/s": "a" },
      conflicts: [],
      rejected: 1,
    },
    {
      name: "independent services",
      input: [candidate("a", "ns/x", T1), candidate("b", "ns/y", T1)],
      winners: { "ns/x": "a", "ns/y": "b" },
      conflicts: [],
      rejected: 0,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const policy = createImportPolicy({ controlCluster: c.controlCluster });
      for (const order of [c.input, [...c.input].reverse()]) {
        const result = policy.resolve(order);
        expect(Object.fromEntries([...result.winners].map(([s, w]) => [s, w.origin]))).toEqual(
          c.winners,
        );
        expect(result.conflicts.map((x) => x.service)).toEqual(c.conflicts);
        expect(result.rejections).toHaveLength(c.rejected);
      }
    });
  }
});

describe("import policy: the mesh record is resolved like a service", () => {
  const at: Record<string, string> = { T1, T2 };
  /** [name, control cluster, candidates ("origin key version", …), winners, conflicts, rejected]. */
  const cases: [string, string, string, object, string[], number][] = [
    ["federated: newest wins", "", "a @mesh T1, b @mesh T2", { "@mesh": "b" }, ["@mesh"], 0],
    [
      "federated: a tie to the smallest origin",
      "",
      "z @mesh T1, a @mesh T1",
      { "@mesh": "a" },
      ["@mesh"],
      0,
    ],
    [
      "control cluster: only the hub's",
      "hub",
      "hub @mesh T1, spoke @mesh T2",
      { "@mesh": "hub" },
      [],
      1,
    ],
    ["beside a service", "", "a @mesh T1, b ns/s T2", { "@mesh": "a", "ns/s": "b" }, [], 0],
  ];
  for (const [name, controlCluster, input, winners, conflicts, rejected] of cases) {
    it(name, () => {
      const candidates = input.split(", ").map((text) => {
        const [origin, key, version] = text.split(" ") as [string, string, string];
        return candidate(origin, key, at[version] as string);
      });
      const result = createImportPolicy({ controlCluster }).resolve(candidates);
      expect(Object.fromEntries([...result.winners].map(([s, w]) => [s, w.origin]))).toEqual(
        winners,
      );
      expect(result.conflicts.map((x) => x.service)).toEqual(conflicts);
      expect(result.rejections).toHaveLength(rejected);
    });
  }
});

describe("import policy: versions out of range", () => {
  const now = Date.parse("2026-11-01T10:00:00Z");
  const policy = createImportPolicy({ now: () => now });
  const cases: [string, string, string | undefined][] = [
    ["now", "2026-11-01T10:00:00.000000000Z", undefined],
    ["the past", "2020-01-01T00:00:00Z", undefined],
    ["5 minutes ahead (the default window)", "2026-11-01T10:05:00.000000000Z", undefined],
    ["5 minutes and 1 ms ahead", "2026-11-01T10:05:00.001000000Z", "version_out_of_range"],
    ["the forged end of time", "9999-12-31T23:59:59.999999999Z", "version_out_of_range"],
  ];
  it.each(cases)("a version of %s: %s", (_name, version, reason) => {
    expect(policy.check(candidate("hub", "shop/a", version))?.reason).toBe(reason);
  });

  it("says how far ahead, and loses to nothing: a far-future version never wins", () => {
    const forged = candidate("west", "shop/a", "9999-12-31T23:59:59.999999999Z");
    const honest = candidate("hub", "shop/a", "2026-11-01T09:00:00Z");
    expect(policy.check(forged)?.message).toMatch(
      /version 9999-12-31T23:59:59\.999999999Z, \d+ s ahead of this importer's clock \(at most 300 s are allowed\)/,
    );
    const resolution = policy.resolve([forged, honest]);
    expect(resolution.winners.get("shop/a")).toBe(honest);
    expect(resolution.rejections.map((r) => r.reason)).toEqual(["version_out_of_range"]);
  });

  it("takes its window from maxFutureMs", () => {
    const strict = createImportPolicy({ now: () => now, maxFutureMs: 1_000 });
    expect(strict.check(candidate("hub", "shop/a", "2026-11-01T10:00:02Z"))?.reason).toBe(
      "version_out_of_range",
    );
  });
});
