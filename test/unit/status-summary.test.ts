/**
 * The import side of GetConfigStatus, table-driven and synchronous: each case
 * feeds stored projections through a projection index and summarizes what it
 * maintains. Every case is also checked against the summary as it was built
 * before the index kept conflicts (resolving the import policy over every
 * entry), so the response stays what it was.
 */
import { generateKeyPairSync } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import { createImportPolicy, type ImportPolicy } from "../../services/common/import-policy.js";
import { parseVersion } from "../../services/common/projection-version.js";
import type { CachedProjection } from "../../services/registrar/cache/cached-projection.js";
import { createProjectionIndex } from "../../services/registrar/cache/projection-index.js";
import {
  type StatusSummary,
  summarizeStatus,
} from "../../services/registrar/service/status-summary.js";
import { encodeProjection } from "../../services/registrar/store/decode-entry.js";
import { parseSigningKey, signStoredValue } from "../../services/signing/signing-key.js";
import { cachedEntry, putOf } from "../support/cache-entries.js";
import { versionAt } from "../support/projections.js";

/** The summary as GetConfigStatus built it from `policy.resolve` over every entry. */
function resolvedSummary(policy: ImportPolicy, entries: CachedProjection[]): StatusSummary {
  const resolution = policy.resolve(entries);
  const origins = new Map<string, { count: number; newest: string; oldest: string }>();
  const instants = new Map<string, { newest: bigint; oldest: bigint }>();
  for (const entry of entries) {
    const ns = parseVersion(entry.projection.version);
    const summary = origins.get(entry.origin) ?? { count: 0, newest: "", oldest: "" };
    const at = instants.get(entry.origin) ?? { newest: -1n, oldest: -1n };
    origins.set(entry.origin, summary);
    instants.set(entry.origin, at);
    summary.count++;
    if (ns === undefined) continue;
    if (at.newest < 0n || ns > at.newest)
      [at.newest, summary.newest] = [ns, entry.projection.version];
    if (at.oldest < 0n || ns < at.oldest)
      [at.oldest, summary.oldest] = [ns, entry.projection.version];
  }
  return {
    origins: [...origins.keys()].sort().map((origin) => {
      const s = origins.get(origin) as { count: number; newest: string; oldest: string };
      return {
        origin,
        projections: s.count,
        newestVersion: s.newest,
        oldestVersion: s.oldest,
        trusted: policy.controlCluster === undefined || policy.controlCluster === origin,
        signedProjections: 0,
      };
    }),
    rejections: resolution.rejections.map((r) => ({
      service: r.candidate.service,
      originCluster: r.candidate.origin,
      reason: r.reason,
      message: r.message,
    })),
    conflicts: resolution.conflicts.map((c) => ({
      service: c.service,
      winnerOrigin: c.winner.origin,
      winnerVersion: c.winner.projection.version,
      loserOrigins: c.losers.map((l) => l.origin),
    })),
  };
}

describe("status summary", () => {
  const cases: {
    name: string;
    controlCluster?: string;
    entries: CachedProjection[];
    origins: [string, number, string, string, boolean][];
    rejections?: [string, string, string][];
    conflicts?: [string, string, string, string[]][];
  }[] = [
    { name: "an empty store", entries: [], origins: [] },
    {
      name: "federated: one conflict, origins by name with oldest and newest",
      entries: [
        cachedEntry("hub", "shop/cart", versionAt(1), 1),
        cachedEntry("hub", "shop/pay", versionAt(3), 2),
        cachedEntry("east", "shop/cart", versionAt(2), 3),
      ],
      origins: [
        ["east", 1, versionAt(2), versionAt(2), true],
        ["hub", 2, versionAt(1), versionAt(3), true],
      ],
      conflicts: [["shop/cart", "east", versionAt(2), ["hub"]]],
    },
    {
      name: "control cluster: other origins untrusted and rejected, no conflicts",
      controlCluster: "hub",
      entries: [
        cachedEntry("hub", "shop/cart", versionAt(1), 1),
        cachedEntry("east", "shop/cart", versionAt(2), 2),
        cachedEntry("west", "shop/a", versionAt(2), 3),
      ],
      origins: [
        ["east", 1, versionAt(2), versionAt(2), false],
        ["hub", 1, versionAt(1), versionAt(1), true],
        ["west", 1, versionAt(2), versionAt(2), false],
      ],
      rejections: [
        ["shop/a", "west", "untrusted_origin"],
        ["shop/cart", "east", "untrusted_origin"],
      ],
    },
    {
      name: "losers best first, conflicts by service",
      entries: [
        cachedEntry("c", "ns/z", versionAt(5), 1),
        cachedEntry("a", "ns/z", versionAt(5), 2),
        cachedEntry("b", "ns/z", versionAt(9), 3),
        cachedEntry("a", "ns/m", versionAt(1), 4),
        cachedEntry("b", "ns/m", versionAt(2), 5),
      ],
      origins: [
        ["a", 2, versionAt(1), versionAt(5), true],
        ["b", 2, versionAt(2), versionAt(9), true],
        ["c", 1, versionAt(5), versionAt(5), true],
      ],
      conflicts: [
        ["ns/m", "b", versionAt(2), ["a"]],
        ["ns/z", "b", versionAt(9), ["a", "c"]],
      ],
    },
    {
      name: "an invalid version counts as a projection, not as newest or oldest",
      entries: [
        cachedEntry("hub", "ns/a", "yesterday", 1),
        cachedEntry("hub", "ns/b", versionAt(4), 2),
        cachedEntry("east", "ns/a", "", 3),
        cachedEntry("east", "ns/b", versionAt(2), 4),
      ],
      origins: [
        ["east", 2, versionAt(2), versionAt(2), true],
        ["hub", 2, versionAt(4), versionAt(4), true],
      ],
      rejections: [
        ["ns/a", "east", "invalid_version"],
        ["ns/a", "hub", "invalid_version"],
      ],
      conflicts: [["ns/b", "hub", versionAt(4), ["east"]]],
    },
    {
      name: "an origin with no valid version has empty newest and oldest",
      entries: [cachedEntry("east", "ns/a", "never", 1)],
      origins: [["east", 1, "", "", true]],
      rejections: [["ns/a", "east", "invalid_version"]],
    },
    {
      name: "one instant written two ways: the first by service is reported",
      entries: [
        cachedEntry("hub", "ns/b", "2026-11-01T11:00:00+01:00", 1),
        cachedEntry("hub", "ns/a", "2026-11-01T10:00:00Z", 2),
      ],
      origins: [["hub", 2, "2026-11-01T10:00:00Z", "2026-11-01T10:00:00Z", true]],
    },
    {
      name: "origins in plain string order, as the store's key order is not",
      entries: [
        cachedEntry("b-1", "ns/a", versionAt(1), 1),
        cachedEntry("b", "ns/b", versionAt(1), 2),
      ],
      origins: [
        ["b", 1, versionAt(1), versionAt(1), true],
        ["b-1", 1, versionAt(1), versionAt(1), true],
      ],
    },
    {
      name: "invalid service keys are rejected and never conflict",
      entries: [
        cachedEntry("a", "NS/x", versionAt(1), 1),
        cachedEntry("b", "NS/x", versionAt(2), 2),
      ],
      origins: [
        ["a", 1, versionAt(1), versionAt(1), true],
        ["b", 1, versionAt(2), versionAt(2), true],
      ],
      rejections: [
        ["NS/x", "a", "invalid_service"],
        ["NS/x", "b", "invalid_service"],
      ],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const policy = createImportPolicy({ controlCluster: c.controlCluster });
      const index = createProjectionIndex({ policy });
      for (const entry of c.entries) index.apply(putOf(entry));
      const summary = summarizeStatus({
        entries: index.entries(),
        rejections: index.rejections(),
        conflicts: index.conflicts(),
        controlCluster: policy.controlCluster,
      });
      expect(
        summary.origins.map((o) => [
          o.origin,
          o.projections,
          o.oldestVersion,
          o.newestVersion,
          o.trusted,
        ]),
      ).toEqual(c.origins);
      expect(summary.rejections.map((r) => [r.service, r.originCluster, r.reason])).toEqual(
        c.rejections ?? [],
      );
      expect(
        summary.conflicts.map((x) => [x.service, x.winnerOrigin, x.winnerVersion, x.loserOrigins]),
      ).toEqual(c.conflicts ?? []);
      expect(summary).toEqual(resolvedSummary(policy, index.entries()));
    });
  }
});

describe("summarizeStatus bounds", () => {
  it("lists the first entries of each list and counts the rest in a final entry", () => {
    const policy = createImportPolicy({});
    const index = createProjectionIndex({ policy });
    // 150 origins; each of the first 120 services exported by two of them (a conflict),
    // and 130 projections with a version that does not parse (rejections).
    for (let i = 0; i < 150; i++) {
      const origin = `o-${String(i).padStart(3, "0")}`;
      if (i < 120) {
        index.apply(putOf(cachedEntry(origin, `ns/c-${i}`, versionAt(1), 2 * i + 1)));
        index.apply(putOf(cachedEntry("z-other", `ns/c-${i}`, versionAt(2), 2 * i + 2)));
      }
      if (i < 130) index.apply(putOf(cachedEntry(origin, `ns/r-${i}`, "not-a-version", 1000 + i)));
      else index.apply(putOf(cachedEntry(origin, `ns/x-${i}`, versionAt(3), 1000 + i)));
    }
    const summary = summarizeStatus({
      entries: index.entries(),
      rejections: index.rejections(),
      conflicts: index.conflicts(),
      controlCluster: undefined,
      limit: 100,
    });
    expect(summary.origins).toHaveLength(101);
    // 151 origins in all (z-other too): the last 51 are counted, with their projections:
    // o-100…o-119 two each, o-120…o-149 one each, z-other 120.
    expect(summary.origins[100]).toEqual({
      origin: "51 more origins not shown (151 in all)",
      projections: 20 * 2 + 30 + 120,
      newestVersion: "",
      oldestVersion: "",
      trusted: false,
      signedProjections: 0,
    });
    expect(summary.rejections).toHaveLength(101);
    expect(summary.rejections[100]).toEqual({
      service: "",
      originCluster: "",
      reason: "truncated",
      message: "30 more rejections not shown (130 in all)",
    });
    expect(summary.conflicts).toHaveLength(101);
    expect(summary.conflicts[100]?.service).toBe("20 more conflicts not shown (120 in all)");
    expect(summary.rejections.slice(0, 100)).toEqual(
      summarizeStatus({
        entries: [],
        rejections: index.rejections(),
        conflicts: [],
        controlCluster: undefined,
        limit: 1_000,
      }).rejections.slice(0, 100),
    );
  });

  it("names at most twenty losers of a conflict", () => {
    const policy = createImportPolicy({});
    const index = createProjectionIndex({ policy });
    for (let i = 0; i < 30; i++) {
      index.apply(
        putOf(cachedEntry(`o-${String(i).padStart(2, "0")}`, "ns/x", versionAt(i + 1), i + 1)),
      );
    }
    const [conflict] = summarizeStatus({
      entries: index.entries(),
      rejections: [],
      conflicts: index.conflicts(),
      controlCluster: undefined,
    }).conflicts;
    expect(conflict?.winnerOrigin).toBe("o-29");
    expect(conflict?.loserOrigins).toHaveLength(21);
    expect(conflict?.loserOrigins[20]).toBe("(9 more)");
  });
});

describe("summarizeStatus signed projections", () => {
  it("counts each origin's projections that carry a signature, reading only the top-level fields", () => {
    const key = parseSigningKey(
      generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }),
      "test key",
    );
    const value = (service: string) =>
      encodeProjection(
        create(ServiceConfigProjectionSchema, { service, version: versionAt(1) }),
        "hub",
      );
    const entries = [
      cachedEntry("hub", "ns/a", versionAt(1), 1, signStoredValue(value("ns/a"), "hub", key)),
      cachedEntry("hub", "ns/b", versionAt(1), 2, value("ns/b")),
      cachedEntry("hub", "ns/c", versionAt(1), 3, signStoredValue(value("ns/c"), "hub", key)),
      cachedEntry("east", "ns/d", versionAt(1), 4),
    ];
    const summary = summarizeStatus({
      entries,
      rejections: [],
      conflicts: [],
      controlCluster: undefined,
    });
    expect(summary.origins.map((o) => [o.origin, o.projections, o.signedProjections])).toEqual([
      ["east", 1, 0],
      ["hub", 3, 2],
    ]);
  });
});
