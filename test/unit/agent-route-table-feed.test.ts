/**
 * The route table feed, table-driven: a table is published only when its
 * content changes (a new signer under the same version included), its JSON
 * is made lazily, the readiness decision, and the cache fingerprint. No
 * timers, no I/O.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { candidateKey } from "../../clients/agent/follower/received-projection.js";
import {
  cacheFingerprint,
  computeReady,
  createRouteTableFeed,
  type ReadinessInputs,
  tableFingerprint,
} from "../../clients/agent/route-table-feed.js";
import {
  ProjectionSignatureSchema,
  type ServiceConfigProjection,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type { ImportCandidate } from "../../services/common/import-policy.js";
import {
  mergeRouteTable,
  type RouteTableInputs,
  routeTableToJson,
} from "../../services/common/route-merge.js";
import { makeProjection, meshRecord, versionAt } from "../support/projections.js";

const imported = (service: string, origin: string, n: number): ImportCandidate => ({
  origin,
  service,
  projection: makeProjection(service, { origin, version: versionAt(n) }),
});
/** `candidate` signed by `keyId` (only the signature's key id is set: the feed reads no more). */
const signedBy = (candidate: ImportCandidate, keyId: string): ImportCandidate => ({
  ...candidate,
  projection: {
    ...candidate.projection,
    signature: create(ProjectionSignatureSchema, { keyId }),
  },
});
const local = (service: string, backend = "local/backend"): ServiceConfigProjection =>
  makeProjection(service, { backend, version: "" });
/** The hub's mesh record at version `n`, as the import policy's winner. */
const mesh = (n: number, attempts = 2): ImportCandidate => ({
  origin: "hub",
  service: "@mesh",
  projection: meshRecord({ retry: { attempts } }, { version: versionAt(n) }),
});

const inputs = (
  dependencies: string[],
  winners: ImportCandidate[],
  locals: ServiceConfigProjection[] = [],
): RouteTableInputs => ({
  dependencies,
  local: new Map(locals.map((p) => [p.service, p])),
  imported: new Map(winners.map((c) => [c.service, c])),
  cluster: "spoke",
});

describe("route table feed: publishing only changes", () => {
  /** Each step's inputs and whether the feed publishes a new table for them. */
  const steps: [string, RouteTableInputs, boolean][] = [
    ["a first table, even an empty one", inputs([], []), true],
    ["the same empty table", inputs(["shop/a"], []), false],
    ["an imported service", inputs(["shop/a"], [imported("shop/a", "hub", 1)]), true],
    ["equal inputs, other objects", inputs(["shop/a"], [imported("shop/a", "hub", 1)]), false],
    [
      "a service outside the set",
      inputs(["shop/a"], [imported("shop/a", "hub", 1), imported("shop/z", "hub", 1)]),
      false,
    ],
    ["a new version", inputs(["shop/a"], [imported("shop/a", "hub", 2)]), true],
    [
      "another origin at the same version",
      inputs(["shop/a"], [imported("shop/a", "east", 2)]),
      true,
    ],
    [
      "local routes win",
      inputs(["shop/a"], [imported("shop/a", "east", 2)], [local("shop/a")]),
      true,
    ],
    [
      "the same local routes",
      inputs(["shop/a"], [imported("shop/a", "east", 3)], [local("shop/a")]),
      false,
    ],
    [
      "other local routes",
      inputs(["shop/a"], [imported("shop/a", "east", 3)], [local("shop/a", "local/other")]),
      true,
    ],
    ["the local routes removed", inputs(["shop/a"], [imported("shop/a", "east", 3)]), true],
    [
      "a larger set",
      inputs(["shop/a", "shop/b"], [imported("shop/a", "east", 3), imported("shop/b", "hub", 1)]),
      true,
    ],
    [
      "signed, the same version",
      inputs(
        ["shop/a", "shop/b"],
        [imported("shop/a", "east", 3), signedBy(imported("shop/b", "hub", 1), "key-a")],
      ),
      true,
    ],
    [
      "the same signer, other objects",
      inputs(
        ["shop/a", "shop/b"],
        [imported("shop/a", "east", 3), signedBy(imported("shop/b", "hub", 1), "key-a")],
      ),
      false,
    ],
    [
      "re-signed by a new key under the same version (a key rotation)",
      inputs(
        ["shop/a", "shop/b"],
        [imported("shop/a", "east", 3), signedBy(imported("shop/b", "hub", 1), "key-b")],
      ),
      true,
    ],
    [
      "the mesh defaults arrive",
      inputs(["shop/a"], [imported("shop/a", "east", 3), mesh(1)]),
      true,
    ],
    [
      "the same mesh defaults, other objects",
      inputs(["shop/a"], [imported("shop/a", "east", 3), mesh(1)]),
      false,
    ],
    [
      "the mesh defaults edited",
      inputs(["shop/a"], [imported("shop/a", "east", 3), mesh(2, 5)]),
      true,
    ],
    [
      "the mesh defaults re-signed under the same version",
      inputs(["shop/a"], [imported("shop/a", "east", 3), signedBy(mesh(2, 5), "key-b")]),
      true,
    ],
    ["the mesh defaults removed", inputs(["shop/a"], [imported("shop/a", "east", 3)]), true],
  ];

  it("publishes a table exactly when its content changed", () => {
    const feed = createRouteTableFeed();
    expect(feed.table).toBeUndefined();
    expect(feed.json()).toBeUndefined();
    for (const [name, step, publishes] of steps) {
      const before = feed.table;
      const published = feed.update(step);
      const merged = mergeRouteTable(step);
      expect([name, published !== undefined]).toEqual([name, publishes]);
      if (publishes) {
        expect(published).toEqual(merged);
        expect(feed.table).toBe(published);
      } else {
        expect(feed.table).toBe(before);
      }
      expect(tableFingerprint(feed.table ?? { services: [] })).toBe(tableFingerprint(merged));
    }
  });

  it("makes the JSON on first use after each change, and only then", () => {
    const feed = createRouteTableFeed();
    feed.update(inputs(["shop/a"], [imported("shop/a", "hub", 1)]));
    const first = feed.json();
    expect(first).toBe(routeTableToJson(feed.table ?? { services: [] }));
    feed.update(inputs(["shop/a"], [imported("shop/a", "hub", 1)])); // no change
    expect(feed.json()).toBe(first);
    feed.update(inputs(["shop/a"], [imported("shop/a", "hub", 2)]));
    const second = feed.json();
    expect(second).not.toBe(first);
    expect(second).toBe(routeTableToJson(feed.table ?? { services: [] }));
  });
});

describe("route table feed: readiness", () => {
  const base: ReadinessInputs = {
    cacheLoaded: false,
    imported: false,
    dependencies: 2,
    local: undefined,
  };
  const cases: [string, Partial<ReadinessInputs>, boolean][] = [
    ["nothing yet", {}, false],
    [
      "a loaded cache, whatever else",
      { cacheLoaded: true, local: { synced: false, failed: false } },
      true,
    ],
    ["a complete imported state, no local source", { imported: true }, true],
    ["an empty dependency set, no local source", { dependencies: 0 }, true],
    [
      "an imported state, local routes not synced",
      { imported: true, local: { synced: false, failed: false } },
      false,
    ],
    [
      "an imported state, local routes synced",
      { imported: true, local: { synced: true, failed: false } },
      true,
    ],
    [
      "an imported state, the local source failed",
      { imported: true, local: { synced: false, failed: true } },
      true,
    ],
    ["local routes synced, no imported state", { local: { synced: true, failed: false } }, false],
    [
      "an empty set, local routes not synced",
      { dependencies: 0, local: { synced: false, failed: false } },
      false,
    ],
  ];
  for (const [name, overrides, ready] of cases) {
    it(`${name}: ${ready ? "ready" : "not ready"}`, () => {
      expect(computeReady({ ...base, ...overrides })).toBe(ready);
    });
  }
});

describe("route table feed: the cache fingerprint", () => {
  const a1 = imported("shop/a", "hub", 1);
  const b1 = imported("shop/b", "hub", 1);
  const state = (services: string[], ...candidates: ImportCandidate[]) => ({
    services,
    candidates: new Map(candidates.map((c) => [candidateKey(c.origin, c.service), c])),
  });
  const locals = (...projections: ServiceConfigProjection[]) =>
    new Map(projections.map((p) => [p.service, p]));
  const reference = cacheFingerprint(state(["shop/a", "shop/b"], a1, b1), locals(local("shop/c")));

  const cases: [string, string, boolean][] = [
    [
      "the same content in another order",
      cacheFingerprint(state(["shop/a", "shop/b"], b1, a1), locals(local("shop/c"))),
      true,
    ],
    [
      "equal candidates, other objects",
      cacheFingerprint(
        state(["shop/a", "shop/b"], imported("shop/a", "hub", 1), b1),
        locals(local("shop/c")),
      ),
      true,
    ],
    [
      "another version",
      cacheFingerprint(
        state(["shop/a", "shop/b"], imported("shop/a", "hub", 2), b1),
        locals(local("shop/c")),
      ),
      false,
    ],
    [
      "a candidate fewer",
      cacheFingerprint(state(["shop/a", "shop/b"], a1), locals(local("shop/c"))),
      false,
    ],
    [
      "another dependency set",
      cacheFingerprint(state(["shop/a"], a1, b1), locals(local("shop/c"))),
      false,
    ],
    [
      "other local routes",
      cacheFingerprint(state(["shop/a", "shop/b"], a1, b1), locals(local("shop/c", "local/x"))),
      false,
    ],
    ["no local routes", cacheFingerprint(state(["shop/a", "shop/b"], a1, b1), locals()), false],
    [
      "a candidate re-signed under the same version",
      cacheFingerprint(
        state(["shop/a", "shop/b"], signedBy(a1, "key-b"), b1),
        locals(local("shop/c")),
      ),
      false,
    ],
  ];
  for (const [name, fingerprint, same] of cases) {
    it(`${name}: ${same ? "the same" : "different"}`, () => {
      expect(fingerprint === reference).toBe(same);
    });
  }
});
