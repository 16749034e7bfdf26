/**
 * The candidate set, table-driven: received changes applied to candidate
 * maps (snapshot, replay, one change), the checks and what a rejection
 * keeps, the once-per-rejection reporting and its bounded memory, and the
 * fresh candidates of a new map. No timers, no client.
 */
import { describe, expect, it } from "vitest";
import {
  type CandidateSet,
  createCandidateSet,
  freshCandidates,
  type ReceivedChange,
} from "../../clients/agent/follower/candidate-set.js";
import { candidateKey } from "../../clients/agent/follower/received-projection.js";
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import { createImportPolicy, type ImportCandidate } from "../../services/common/import-policy.js";
import { makeProjection, versionAt } from "../support/projections.js";

const projection = (service: string, origin: string, n: number): ServiceConfigProjection =>
  makeProjection(service, { origin, version: versionAt(n) });

/** A put of `origin/service` at version `n`. */
const put = (origin: string, service: string, n: number): ReceivedChange => ({
  kind: "put",
  origin,
  service,
  projection: projection(service, origin, n),
});
const del = (origin: string, service: string): ReceivedChange => ({
  kind: "delete",
  origin,
  service,
  projection: undefined,
});
/** A put whose projection has `fields` changed. */
const forged = (
  origin: string,
  service: string,
  fields: Partial<Pick<ServiceConfigProjection, "version" | "service" | "originCluster">>,
): ReceivedChange => ({
  kind: "put",
  origin,
  service,
  projection: { ...projection(service, origin, 1), ...fields },
});
const empty = (origin: string, service: string): ReceivedChange => ({
  kind: "put",
  origin,
  service,
  projection: undefined,
});

const candidate = (origin: string, service: string, n: number): ImportCandidate => ({
  origin,
  service,
  projection: projection(service, origin, n),
});
const mapOf = (...candidates: ImportCandidate[]) =>
  new Map(candidates.map((c) => [candidateKey(c.origin, c.service), c]));

/** `origin/service@nnn` per candidate, in order. */
const names = (candidates: Iterable<ImportCandidate>) =>
  [...candidates].map((c) => `${c.origin}/${c.service}@${c.projection.version.slice(-4, -1)}`);

/** `origin/service@nnn` per candidate of a map, sorted. */
const held = (map: ReadonlyMap<string, ImportCandidate> | undefined) =>
  map === undefined ? undefined : names(map.values()).sort();

const HUB_A1 = candidate("hub", "shop/a", 1);
const HUB_B1 = candidate("hub", "shop/b", 1);
const EAST_A2 = candidate("east", "shop/a", 2);

const newSet = (controlCluster?: string) =>
  createCandidateSet({
    policy: createImportPolicy(controlCluster === undefined ? {} : { controlCluster }),
    services: ["shop/a", "shop/b"],
  });

interface Row {
  readonly name: string;
  /** The control cluster; federated when undefined. */
  readonly control?: string;
  readonly previous: ImportCandidate[] | undefined;
  readonly changes: ReceivedChange[];
  readonly snapshot: string[];
  readonly replay: string[];
  /** `reason:origin/service` per reported rejection. */
  readonly rejections: string[];
}

const rows: Row[] = [
  {
    name: "puts of requested services are accepted, the last one per key winning",
    previous: undefined,
    changes: [put("hub", "shop/a", 1), put("east", "shop/a", 2), put("hub", "shop/a", 3)],
    snapshot: ["east/shop/a@002", "hub/shop/a@003"],
    replay: ["east/shop/a@002", "hub/shop/a@003"],
    rejections: [],
  },
  {
    name: "a snapshot replaces the previous map, a replay applies to it",
    previous: [HUB_A1, HUB_B1],
    changes: [put("east", "shop/a", 2)],
    snapshot: ["east/shop/a@002"],
    replay: ["east/shop/a@002", "hub/shop/a@001", "hub/shop/b@001"],
    rejections: [],
  },
  {
    name: "a delete removes its key",
    previous: [HUB_A1, HUB_B1],
    changes: [del("hub", "shop/b")],
    snapshot: [],
    replay: ["hub/shop/a@001"],
    rejections: [],
  },
  {
    name: "a put then a delete of one key leaves nothing",
    previous: [],
    changes: [put("hub", "shop/a", 4), del("hub", "shop/a")],
    snapshot: [],
    replay: [],
    rejections: [],
  },
  {
    name: "a service that was not requested is refused",
    previous: undefined,
    changes: [put("hub", "shop/z", 1)],
    snapshot: [],
    replay: [],
    rejections: ["not_requested:hub/shop/z"],
  },
  {
    name: "a delete outside the requested set is refused, and removes nothing",
    previous: [HUB_A1],
    changes: [del("hub", "shop/z")],
    snapshot: [],
    replay: ["hub/shop/a@001"],
    rejections: ["not_requested:hub/shop/z"],
  },
  {
    name: "a delete naming no origin is malformed, and removes nothing",
    previous: [HUB_A1],
    changes: [del("", "shop/a")],
    snapshot: [],
    replay: ["hub/shop/a@001"],
    rejections: ["malformed_event:/shop/a"],
  },
  {
    name: "a put without a projection is malformed",
    previous: undefined,
    changes: [empty("hub", "shop/a")],
    snapshot: [],
    replay: [],
    rejections: ["malformed_event:hub/shop/a"],
  },
  {
    name: "a put naming no origin is malformed",
    previous: undefined,
    changes: [put("", "shop/a", 1)],
    snapshot: [],
    replay: [],
    rejections: ["malformed_event:/shop/a"],
  },
  {
    name: "a put whose projection claims another origin is malformed, and keeps the previous one",
    previous: [HUB_B1],
    changes: [forged("hub", "shop/b", { originCluster: "rogue" })],
    snapshot: ["hub/shop/b@001"],
    replay: ["hub/shop/b@001"],
    rejections: ["malformed_event:hub/shop/b"],
  },
  {
    name: "a bad version over a good projection is rejected, and the good one stays",
    previous: [HUB_A1],
    changes: [forged("hub", "shop/a", { version: "yesterday" })],
    snapshot: ["hub/shop/a@001"],
    replay: ["hub/shop/a@001"],
    rejections: ["invalid_version:hub/shop/a"],
  },
  {
    name: "a projection naming another service is rejected",
    previous: undefined,
    changes: [forged("hub", "shop/a", { service: "shop/b" })],
    snapshot: [],
    replay: [],
    rejections: ["service_mismatch:hub/shop/a"],
  },
  {
    name: "with a control cluster, another origin is untrusted, however new",
    control: "hub",
    previous: [HUB_A1],
    changes: [put("rogue", "shop/a", 9), put("hub", "shop/b", 1)],
    snapshot: ["hub/shop/b@001"],
    replay: ["hub/shop/a@001", "hub/shop/b@001"],
    rejections: ["untrusted_origin:rogue/shop/a"],
  },
  {
    name: "a rejected put keeps nothing when the previous map had nothing for its key",
    previous: [EAST_A2],
    changes: [forged("hub", "shop/a", { version: "later" })],
    snapshot: [],
    replay: ["east/shop/a@002"],
    rejections: ["invalid_version:hub/shop/a"],
  },
];

const describeRejections = (
  rejections: readonly { reason: string; origin: string; service: string }[],
) => rejections.map((r) => `${r.reason}:${r.origin}/${r.service}`);

describe("candidate set: snapshot and replay", () => {
  for (const row of rows) {
    it(row.name, () => {
      const previous = row.previous === undefined ? undefined : mapOf(...row.previous);
      const before = held(previous);
      const snapshot = newSet(row.control).snapshot(previous, row.changes);
      expect(held(snapshot.candidates)).toEqual(row.snapshot);
      expect(describeRejections(snapshot.rejections)).toEqual(row.rejections);
      const replay = newSet(row.control).replay(previous, row.changes);
      expect(held(replay.candidates)).toEqual(row.replay);
      expect(describeRejections(replay.rejections)).toEqual(row.rejections);
      expect(held(previous)).toEqual(before); // never changed
      expect(snapshot.candidates).not.toBe(previous);
      expect(replay.candidates).not.toBe(previous);
    });
  }

  it("keeps the very candidate a rejected put would have replaced", () => {
    const previous = mapOf(HUB_A1);
    const { candidates } = newSet().snapshot(previous, [
      forged("hub", "shop/a", { version: "yesterday" }),
    ]);
    expect(candidates.get(candidateKey("hub", "shop/a"))).toBe(HUB_A1);
  });

  it("stamps an accepted projection that names no origin with the event's", () => {
    const { candidates } = newSet().snapshot(undefined, [
      forged("hub", "shop/a", { originCluster: "" }),
    ]);
    expect(candidates.get(candidateKey("hub", "shop/a"))?.projection.originCluster).toBe("hub");
  });

  it("checks against the requested set it was given last", () => {
    const set = newSet();
    set.setServices(["shop/c"]);
    expect([...set.requested]).toEqual(["shop/c"]);
    const { candidates, rejections } = set.replay(mapOf(HUB_A1), [
      put("hub", "shop/c", 1),
      forged("hub", "shop/a", { version: "yesterday" }),
    ]);
    // A replay copies the previous map, so it still holds shop/a; a snapshot
    // does not keep the candidate of a service no longer requested.
    expect(held(candidates)).toEqual(["hub/shop/a@001", "hub/shop/c@001"]);
    expect(describeRejections(rejections)).toEqual(["not_requested:hub/shop/a"]);
    const fresh = set.snapshot(mapOf(HUB_A1), [forged("hub", "shop/a", { version: "x" })]);
    expect(held(fresh.candidates)).toEqual([]);
  });
});

describe("candidate set: one streamed change", () => {
  const cases: {
    name: string;
    current: ImportCandidate[] | undefined;
    change: ReceivedChange;
    /** The new map, or undefined when nothing changed. */
    next: string[] | undefined;
    rejections: string[];
  }[] = [
    {
      name: "an upsert gives a new map",
      current: [HUB_A1],
      change: put("hub", "shop/a", 2),
      next: ["hub/shop/a@002"],
      rejections: [],
    },
    {
      name: "an upsert with no state gives a first map",
      current: undefined,
      change: put("hub", "shop/b", 2),
      next: ["hub/shop/b@002"],
      rejections: [],
    },
    {
      name: "a delete of a held key gives a new map",
      current: [HUB_A1, HUB_B1],
      change: del("hub", "shop/a"),
      next: ["hub/shop/b@001"],
      rejections: [],
    },
    {
      name: "a delete of a key not held changes nothing",
      current: [HUB_A1],
      change: del("east", "shop/a"),
      next: undefined,
      rejections: [],
    },
    {
      name: "a rejected upsert over a held key changes nothing",
      current: [HUB_A1],
      change: forged("hub", "shop/a", { version: "yesterday" }),
      next: undefined,
      rejections: ["invalid_version:hub/shop/a"],
    },
    {
      name: "a refused delete changes nothing",
      current: [HUB_A1],
      change: del("hub", "shop/z"),
      next: undefined,
      rejections: ["not_requested:hub/shop/z"],
    },
    {
      name: "the same content again is a new candidate, so a new map",
      current: [HUB_A1],
      change: put("hub", "shop/a", 1),
      next: ["hub/shop/a@001"],
      rejections: [],
    },
  ];
  for (const row of cases) {
    it(row.name, () => {
      const current = row.current === undefined ? undefined : mapOf(...row.current);
      const before = held(current);
      const result = newSet().change(current, row.change);
      expect(held(result.candidates)).toEqual(row.next);
      expect(describeRejections(result.rejections)).toEqual(row.rejections);
      expect(held(current)).toEqual(before);
      if (result.candidates !== undefined) expect(result.candidates).not.toBe(current);
    });
  }
});

describe("candidate set: each rejection is reported once", () => {
  /** Runs `steps` through one set, returning the rejections each step reported. */
  const run = (set: CandidateSet, steps: ReceivedChange[][]) => {
    let current: Map<string, ImportCandidate> | undefined;
    return steps.map((changes) => {
      const result = set.replay(current, changes);
      current = result.candidates;
      return describeRejections(result.rejections);
    });
  };
  const bad = (service: string, version = "yesterday") => forged("hub", service, { version });

  const cases: { name: string; steps: ReceivedChange[][]; reported: string[][] }[] = [
    {
      name: "the same rejection again, within a batch and in later ones, is not reported again",
      steps: [[bad("shop/a"), bad("shop/a")], [bad("shop/a")]],
      reported: [["invalid_version:hub/shop/a"], []],
    },
    {
      name: "another version of a rejected key is reported",
      steps: [[bad("shop/a")], [bad("shop/a", "tomorrow")]],
      reported: [["invalid_version:hub/shop/a"], ["invalid_version:hub/shop/a"]],
    },
    {
      name: "another reason for a rejected key is reported",
      steps: [[bad("shop/a", "")], [empty("hub", "shop/a")]],
      reported: [["invalid_version:hub/shop/a"], ["malformed_event:hub/shop/a"]],
    },
    {
      name: "an accepted put forgets a key's rejection: it is reported again after",
      steps: [[bad("shop/a")], [put("hub", "shop/a", 1)], [bad("shop/a")]],
      reported: [["invalid_version:hub/shop/a"], [], ["invalid_version:hub/shop/a"]],
    },
    {
      name: "an accepted delete forgets a key's rejection",
      steps: [[bad("shop/a"), del("hub", "shop/a"), bad("shop/a")]],
      reported: [["invalid_version:hub/shop/a", "invalid_version:hub/shop/a"]],
    },
    {
      name: "refused deletes are reported once too",
      steps: [[del("hub", "shop/z")], [del("hub", "shop/z")], [del("", "shop/a")]],
      reported: [["not_requested:hub/shop/z"], [], ["malformed_event:/shop/a"]],
    },
  ];
  for (const row of cases) {
    it(row.name, () => {
      expect(run(newSet(), row.steps)).toEqual(row.reported);
    });
  }

  it("remembers a bounded number of rejections: a full memory starts over", () => {
    const set = createCandidateSet({
      policy: createImportPolicy(),
      services: ["shop/a", "shop/b", "shop/c"],
      rememberedRejections: 2,
    });
    expect(
      run(set, [
        [bad("shop/a"), bad("shop/b")], // remembers two
        [bad("shop/a"), bad("shop/b")], // both remembered
        [bad("shop/c")], // the memory is full: cleared, then c remembered
        [bad("shop/a"), bad("shop/c")], // a was forgotten; c is still remembered
      ]),
    ).toEqual([
      ["invalid_version:hub/shop/a", "invalid_version:hub/shop/b"],
      [],
      ["invalid_version:hub/shop/c"],
      ["invalid_version:hub/shop/a"],
    ]);
  });
});

describe("candidate set: fresh candidates", () => {
  const cases: {
    name: string;
    previous: ImportCandidate[] | undefined;
    next: ImportCandidate[];
    fresh: string[];
  }[] = [
    {
      name: "with no previous map, every candidate",
      previous: undefined,
      next: [HUB_A1, HUB_B1],
      fresh: ["hub/shop/a@001", "hub/shop/b@001"],
    },
    {
      name: "the same versions: none",
      previous: [HUB_A1, HUB_B1],
      next: [candidate("hub", "shop/a", 1), HUB_B1],
      fresh: [],
    },
    {
      name: "a new version of a key",
      previous: [HUB_A1],
      next: [candidate("hub", "shop/a", 3)],
      fresh: ["hub/shop/a@003"],
    },
    { name: "a new key", previous: [HUB_A1], next: [HUB_A1, EAST_A2], fresh: ["east/shop/a@002"] },
    { name: "a removed key is not fresh", previous: [HUB_A1, HUB_B1], next: [HUB_B1], fresh: [] },
  ];
  for (const row of cases) {
    it(row.name, () => {
      const previous = row.previous === undefined ? undefined : mapOf(...row.previous);
      expect(names(freshCandidates(previous, mapOf(...row.next)))).toEqual(row.fresh);
    });
  }
});
