/**
 * The agent's guard against a mass disappearance in a complete state, and
 * what a new state takes away (deletes, rollbacks), table-driven: maps in,
 * decisions out. No timers, no client.
 */
import { describe, expect, it } from "vitest";
import { appliedLoss } from "../../clients/agent/follower/applied-loss.js";
import { candidateKey } from "../../clients/agent/follower/received-projection.js";
import {
  expiredHolds,
  guardCompleteState,
  type HeldCandidate,
  type VanishGuardOptions,
} from "../../clients/agent/follower/vanish-guard.js";
import type { ImportCandidate } from "../../services/common/import-policy.js";
import { makeProjection, versionAt } from "../support/projections.js";

const candidate = (origin: string, service: string, n = 1): ImportCandidate => ({
  origin,
  service,
  projection: makeProjection(service, { origin, version: versionAt(n) }),
});
const mapOf = (...candidates: ImportCandidate[]) =>
  new Map(candidates.map((c) => [candidateKey(c.origin, c.service), c]));
const names = (candidates: Iterable<ImportCandidate>) =>
  [...candidates].map((c) => `${c.origin}/${c.service}`).sort();
/** `n` candidates of `origin`, services `ns/s0`…. */
const many = (origin: string, n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => candidate(origin, `ns/s${from + i}`));

const options: VanishGuardOptions = { threshold: { fraction: 0.5, minCount: 3 }, holdMs: 600_000 };
const NOW = 1_000_000;

describe("guardCompleteState: which missing candidates are held", () => {
  const cases: {
    name: string;
    previous: ImportCandidate[] | undefined;
    next: ImportCandidate[];
    requested?: string[];
    held: string[];
    reason?: RegExp;
  }[] = [
    { name: "no previous state: nothing to guard", previous: undefined, next: [], held: [] },
    {
      name: "one of many missing is applied",
      previous: many("hub", 10),
      next: many("hub", 9),
      held: [],
    },
    {
      name: "a fresh snapshot that lost one of two is applied",
      previous: many("hub", 2),
      next: many("hub", 1),
      held: [],
    },
    {
      name: "most of an origin missing at once is held",
      previous: [...many("hub", 4), ...many("east", 6, 10)],
      next: [candidate("hub", "ns/s0"), ...many("east", 6, 10)],
      held: ["hub/ns/s1", "hub/ns/s2", "hub/ns/s3"],
      reason: /^3 of origin hub's 4 imported projections missing from one complete state$/,
    },
    {
      name: "most of everything missing at once, spread over origins below the minimum each, is held",
      previous: [...many("a", 2), ...many("b", 2, 2), candidate("c", "ns/x")],
      next: [candidate("c", "ns/x")],
      held: ["a/ns/s0", "a/ns/s1", "b/ns/s2", "b/ns/s3"],
      reason: /^4 of the 5 imported projections missing from one complete state$/,
    },
    {
      name: "an empty state after a non-empty one is held, even below the minimum",
      previous: [candidate("hub", "ns/only")],
      next: [],
      held: ["hub/ns/only"],
      reason: /\(none left\)$/,
    },
    {
      name: "services that left the dependency set are not missing",
      previous: many("hub", 5),
      next: [candidate("hub", "ns/s0")],
      requested: ["ns/s0"],
      held: [],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const previous = c.previous === undefined ? undefined : mapOf(...c.previous);
      const requested = new Set(
        c.requested ?? [...(c.previous ?? []), ...c.next].map((x) => x.service),
      );
      const out = guardCompleteState(
        { previous, next: mapOf(...c.next), requested, held: new Map(), now: NOW },
        options,
      );
      expect(names(out.newlyHeld.map((h) => h.candidate))).toEqual(c.held);
      expect([...out.held.keys()].length).toBe(c.held.length);
      // The state to commit is the new one plus every held candidate.
      expect(names(out.candidates.values())).toEqual(
        names([...c.next, ...out.newlyHeld.map((h) => h.candidate)]),
      );
      for (const hold of out.newlyHeld) {
        expect(hold.since).toBe(NOW);
        expect(hold.candidate).toBe(
          previous?.get(candidateKey(hold.candidate.origin, hold.candidate.service)),
        );
      }
      if (c.reason !== undefined) expect(out.newlyHeld[0]?.reason).toMatch(c.reason);
    });
  }
});

describe("guardCompleteState: what becomes of holds in force", () => {
  const heldOf = (c: ImportCandidate, since: number): [string, HeldCandidate] => [
    candidateKey(c.origin, c.service),
    { candidate: c, since, reason: "wiped" },
  ];
  const a = candidate("hub", "ns/a");
  const b = candidate("hub", "ns/b");
  const c = candidate("hub", "ns/c");
  const d = candidate("hub", "ns/d");
  const kept = candidate("hub", "ns/kept");
  // a: back; b: still missing, young; c: still missing, too old; d: left the dependency set.
  const held = new Map([
    heldOf(a, NOW - 10),
    heldOf(b, NOW - 10),
    heldOf(c, NOW - 600_000),
    heldOf(d, NOW - 10),
  ]);
  const previous = mapOf(a, b, c, d, kept);
  const aAgain = candidate("hub", "ns/a", 2);
  const out = guardCompleteState(
    {
      previous,
      next: mapOf(aAgain, kept),
      requested: new Set(["ns/a", "ns/b", "ns/c", "ns/kept"]),
      held,
      now: NOW,
    },
    options,
  );

  it("releases the ones back, keeps the young ones, drops the expired ones and the unrequested", () => {
    expect(out.back).toEqual([aAgain]);
    expect(names(out.expired.map((h) => h.candidate))).toEqual(["hub/ns/c"]);
    expect([...out.held.keys()]).toEqual([candidateKey("hub", "ns/b")]);
    expect(out.held.get(candidateKey("hub", "ns/b"))?.since).toBe(NOW - 10); // not restarted
    expect(names(out.candidates.values())).toEqual(["hub/ns/a", "hub/ns/b", "hub/ns/kept"]);
    expect(out.candidates.get(candidateKey("hub", "ns/a"))).toBe(aAgain);
    expect(out.newlyHeld).toEqual([]);
  });

  it("expiredHolds names the holds that lasted holdMs", () => {
    expect(expiredHolds(held, NOW, 600_000)).toEqual([candidateKey("hub", "ns/c")]);
    expect(expiredHolds(held, NOW + 600_000, 600_000)).toHaveLength(4);
    expect(expiredHolds(new Map(), NOW, 1)).toEqual([]);
  });
});

describe("appliedLoss", () => {
  const a1 = candidate("hub", "ns/a", 1);
  const a3 = candidate("hub", "ns/a", 3);
  const b = candidate("east", "ns/b");
  const c = candidate("east", "ns/c");
  const cases: {
    name: string;
    previous: ImportCandidate[] | undefined;
    next: ImportCandidate[];
    requested: string[];
    deleted: string[];
  }[] = [
    {
      name: "no previous state",
      previous: undefined,
      next: [a1],
      requested: ["ns/a"],
      deleted: [],
    },
    {
      name: "nothing changed",
      previous: [a1, b],
      next: [a1, b],
      requested: ["ns/a", "ns/b"],
      deleted: [],
    },
    {
      name: "a newer version",
      previous: [a1],
      next: [a3],
      requested: ["ns/a"],
      deleted: [],
    },
    {
      name: "an older version is no loss (the candidate set refuses rollbacks before)",
      previous: [a3],
      next: [a1],
      requested: ["ns/a"],
      deleted: [],
    },
    {
      name: "a missing candidate is a delete",
      previous: [a1, b, c],
      next: [a1],
      requested: ["ns/a", "ns/b", "ns/c"],
      deleted: ["east/ns/b", "east/ns/c"],
    },
    {
      name: "a service that left the dependency set is not",
      previous: [a1, b],
      next: [a1],
      requested: ["ns/a"],
      deleted: [],
    },
  ];
  for (const t of cases) {
    it(t.name, () => {
      const loss = appliedLoss(
        t.previous === undefined ? undefined : mapOf(...t.previous),
        mapOf(...t.next),
        new Set(t.requested),
      );
      expect(names(loss.deleted)).toEqual(t.deleted);
    });
  }
});
