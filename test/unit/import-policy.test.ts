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
