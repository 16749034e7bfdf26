/**
 * The projection index, table-driven and synchronous: no store, no timers.
 * Each case builds an index from changes and checks what one more change
 * records, and what the index then holds.
 */
import { describe, expect, it } from "vitest";
import { createImportPolicy, type ImportRejection } from "../../services/common/import-policy.js";
import type { CachedProjection } from "../../services/registrar/cache/cached-projection.js";
import {
  type CacheChange,
  type CacheView,
  createProjectionIndex,
  type ProjectionIndex,
} from "../../services/registrar/cache/projection-index.js";
import { cachedEntry, deleteOf, eventText, putOf, UNDECODABLE } from "../support/cache-entries.js";
import { versionAt } from "../support/projections.js";

/** An index under a policy (federated unless `controlCluster`), recording newly rejected entries. */
function indexOf(controlCluster?: string) {
  const newlyRejected: string[] = [];
  const index = createProjectionIndex({
    policy: createImportPolicy({ controlCluster }),
    onRejection: (r: ImportRejection<CachedProjection>) =>
      newlyRejected.push(`${r.candidate.origin}/${r.candidate.service}:${r.reason}`),
  });
  return { index, newlyRejected };
}

/** What an index holds, in short strings. */
function held(index: ProjectionIndex) {
  return {
    winners: index.snapshot(undefined, "effective").map((e) => `${e.service}<-${e.origin}`),
    conflicts: index
      .conflicts()
      .map((c) => `${c.service}:${c.winner.origin}>${c.losers.map((l) => l.origin).join(",")}`),
    rejections: index
      .rejections()
      .map((r) => `${r.candidate.origin}/${r.candidate.service}:${r.reason}`),
  };
}

/** The `raw` of a put the index refuses (a rollback): no record at all. */
const REFUSED = "refused";

/** The winners with the modification revision of the entry each one is. */
function withRevision(index: ProjectionIndex): string[] {
  return index
    .snapshot(undefined, "effective")
    .map((e) => `${e.service}<-${e.origin}@${e.modRevision}`);
}

const hubA1 = cachedEntry("hub", "ns/a", versionAt(1), 1);
const eastA2 = cachedEntry("east", "ns/a", versionAt(2), 2);
const westA0 = cachedEntry("west", "ns/a", versionAt(0), 3);

describe("projection index: apply", () => {
  const cases: {
    name: string;
    controlCluster?: string;
    before?: CacheChange[];
    change: CacheChange;
    raw: string;
    effective: string;
    newlyRejected?: string[];
    winners: string[];
    conflicts?: string[];
    rejections?: string[];
  }[] = [
    {
      name: "a put into an empty service is its winner",
      change: putOf(hubA1),
      raw: "upsert:hub/ns/a@1",
      effective: "upsert:hub/ns/a@1",
      winners: ["ns/a<-hub"],
    },
    {
      name: "an older second origin loses: no effective change, a conflict",
      before: [putOf(hubA1)],
      change: putOf(westA0),
      raw: "upsert:west/ns/a@3",
      effective: "-",
      winners: ["ns/a<-hub"],
      conflicts: ["ns/a:hub>west"],
    },
    {
      name: "a newer second origin takes over",
      before: [putOf(hubA1)],
      change: putOf(eastA2),
      raw: "upsert:east/ns/a@2",
      effective: "upsert:east/ns/a@2",
      winners: ["ns/a<-east"],
      conflicts: ["ns/a:east>hub"],
    },
    {
      name: "losers are ranked best first",
      before: [putOf(westA0), putOf(hubA1)],
      change: putOf(eastA2),
      raw: "upsert:east/ns/a@2",
      effective: "upsert:east/ns/a@2",
      winners: ["ns/a<-east"],
      conflicts: ["ns/a:east>hub,west"],
    },
    {
      name: "equal versions: the smallest origin name wins, whatever the order",
      before: [putOf(cachedEntry("zeta", "ns/a", versionAt(1), 1))],
      change: putOf(cachedEntry("alpha", "ns/a", versionAt(1), 2)),
      raw: "upsert:alpha/ns/a@2",
      effective: "upsert:alpha/ns/a@2",
      winners: ["ns/a<-alpha"],
      conflicts: ["ns/a:alpha>zeta"],
    },
    {
      name: "a new value of the winner is an effective upsert",
      before: [putOf(hubA1)],
      change: putOf(cachedEntry("hub", "ns/a", versionAt(5), 4)),
      raw: "upsert:hub/ns/a@4",
      effective: "upsert:hub/ns/a@4",
      winners: ["ns/a<-hub"],
    },
    {
      name: "deleting the winner promotes the runner-up",
      before: [putOf(hubA1), putOf(eastA2), putOf(westA0)],
      change: deleteOf("east", "ns/a", 9),
      raw: "delete:east/ns/a@9",
      effective: "upsert:hub/ns/a@9",
      winners: ["ns/a<-hub"],
      conflicts: ["ns/a:hub>west"],
    },
    {
      name: "deleting a loser changes nothing effective and ends the conflict",
      before: [putOf(hubA1), putOf(eastA2)],
      change: deleteOf("hub", "ns/a", 9),
      raw: "delete:hub/ns/a@9",
      effective: "-",
      winners: ["ns/a<-east"],
    },
    {
      name: "deleting the last entry deletes the service, from its winner's origin",
      before: [putOf(hubA1)],
      change: deleteOf("hub", "ns/a", 9),
      raw: "delete:hub/ns/a@9",
      effective: "delete:hub/ns/a@9",
      winners: [],
    },
    {
      name: "deleting what is not there is a raw delete only",
      before: [putOf(hubA1)],
      change: deleteOf("east", "ns/b", 9),
      raw: "delete:east/ns/b@9",
      effective: "-",
      winners: ["ns/a<-hub"],
    },
    {
      name: "an untrusted origin is rejected, reported once, and never wins",
      controlCluster: "hub",
      before: [putOf(hubA1)],
      change: putOf(eastA2),
      raw: "upsert:east/ns/a@2",
      effective: "-",
      newlyRejected: ["east/ns/a:untrusted_origin"],
      winners: ["ns/a<-hub"],
      rejections: ["east/ns/a:untrusted_origin"],
    },
    {
      name: "the same rejected value applied again is not reported again",
      controlCluster: "hub",
      before: [putOf(eastA2)],
      change: putOf(eastA2),
      raw: "upsert:east/ns/a@2",
      effective: "-",
      winners: [],
      rejections: ["east/ns/a:untrusted_origin"],
    },
    {
      name: "a new rejected value is reported again",
      controlCluster: "hub",
      before: [putOf(eastA2)],
      change: putOf(cachedEntry("east", "ns/a", versionAt(3), 5)),
      raw: "upsert:east/ns/a@5",
      effective: "-",
      newlyRejected: ["east/ns/a:untrusted_origin"],
      winners: [],
      rejections: ["east/ns/a:untrusted_origin"],
    },
    {
      name: "an invalid version never wins, even over an older valid one",
      before: [putOf(hubA1)],
      change: putOf(cachedEntry("east", "ns/a", "not-a-time", 2)),
      raw: "upsert:east/ns/a@2",
      effective: "-",
      newlyRejected: ["east/ns/a:invalid_version"],
      winners: ["ns/a<-hub"],
      rejections: ["east/ns/a:invalid_version"],
    },
    {
      name: "a valid value clears the rejection and can win",
      before: [putOf(hubA1), putOf(cachedEntry("east", "ns/a", "not-a-time", 2))],
      change: putOf(cachedEntry("east", "ns/a", versionAt(7), 3)),
      raw: "upsert:east/ns/a@3",
      effective: "upsert:east/ns/a@3",
      winners: ["ns/a<-east"],
      conflicts: ["ns/a:east>hub"],
    },
    {
      name: "a delete clears the rejection",
      before: [putOf(cachedEntry("east", "ns/a", "not-a-time", 2))],
      change: deleteOf("east", "ns/a", 3),
      raw: "delete:east/ns/a@3",
      effective: "-",
      winners: [],
    },
    {
      name: "a rejected-only service has no winner and no conflict",
      controlCluster: "hub",
      before: [putOf(cachedEntry("east", "ns/b", versionAt(1), 1))],
      change: putOf(cachedEntry("west", "ns/b", versionAt(2), 2)),
      raw: "upsert:west/ns/b@2",
      effective: "-",
      newlyRejected: ["west/ns/b:untrusted_origin"],
      winners: [],
      rejections: ["east/ns/b:untrusted_origin", "west/ns/b:untrusted_origin"],
    },
    {
      name: "services are independent",
      before: [putOf(hubA1)],
      change: putOf(cachedEntry("east", "ns/b", versionAt(0), 2)),
      raw: "upsert:east/ns/b@2",
      effective: "upsert:east/ns/b@2",
      winners: ["ns/a<-hub", "ns/b<-east"],
    },
    {
      name: "rollback: an older version of the same origin is refused, the newer stays the winner",
      before: [putOf(eastA2)],
      change: putOf(cachedEntry("east", "ns/a", versionAt(1), 5)),
      raw: REFUSED,
      effective: "-",
      newlyRejected: ["east/ns/a:rollback"],
      winners: ["ns/a<-east@2"],
      rejections: ["east/ns/a:rollback"],
    },
    {
      name: "rollback: the same refused value again is not reported again",
      before: [putOf(eastA2), putOf(cachedEntry("east", "ns/a", versionAt(1), 5))],
      change: putOf(cachedEntry("east", "ns/a", versionAt(1), 5)),
      raw: REFUSED,
      effective: "-",
      winners: ["ns/a<-east@2"],
      rejections: ["east/ns/a:rollback"],
    },
    {
      name: "rollback: the mark survives a delete, so an old value written back after it is refused",
      before: [putOf(eastA2), deleteOf("east", "ns/a", 3)],
      change: putOf(cachedEntry("east", "ns/a", versionAt(1), 4)),
      raw: REFUSED,
      effective: "-",
      newlyRejected: ["east/ns/a:rollback"],
      winners: [],
      rejections: ["east/ns/a:rollback"],
    },
    {
      name: "rollback: the same version again is no rollback (a value listed again)",
      before: [putOf(eastA2)],
      change: putOf(cachedEntry("east", "ns/a", versionAt(2), 7)),
      raw: "upsert:east/ns/a@7",
      effective: "upsert:east/ns/a@7",
      winners: ["ns/a<-east@7"],
    },
    {
      name: "rollback: marks are per origin (federated: another origin's older version only loses)",
      before: [putOf(eastA2)],
      change: putOf(westA0),
      raw: "upsert:west/ns/a@3",
      effective: "-",
      winners: ["ns/a<-east@2"],
      conflicts: ["ns/a:east>west"],
    },
    {
      name: "rollback: a newer version clears the refusal and wins",
      before: [putOf(eastA2), putOf(cachedEntry("east", "ns/a", versionAt(1), 5))],
      change: putOf(cachedEntry("east", "ns/a", versionAt(3), 6)),
      raw: "upsert:east/ns/a@6",
      effective: "upsert:east/ns/a@6",
      winners: ["ns/a<-east@6"],
    },
    {
      name: "rollback: a delete clears the refusal (the old value is gone) and deletes the newer",
      before: [putOf(eastA2), putOf(cachedEntry("east", "ns/a", versionAt(1), 5))],
      change: deleteOf("east", "ns/a", 6),
      raw: "delete:east/ns/a@6",
      effective: "delete:east/ns/a@6",
      winners: [],
    },
    {
      name: "rollback: a far-future version_out_of_range value never raises the mark",
      before: [putOf(cachedEntry("east", "ns/a", "9999-12-31T23:59:59.999999999Z", 2))],
      change: putOf(cachedEntry("east", "ns/a", versionAt(1), 3)),
      raw: "upsert:east/ns/a@3",
      effective: "upsert:east/ns/a@3",
      winners: ["ns/a<-east@3"],
    },
    {
      name: "rollback: an untrusted origin's value sets no mark (control cluster)",
      controlCluster: "hub",
      before: [putOf(cachedEntry("east", "ns/a", versionAt(2), 2))],
      change: putOf(cachedEntry("east", "ns/a", versionAt(1), 3)),
      raw: "upsert:east/ns/a@3",
      effective: "-",
      newlyRejected: ["east/ns/a:untrusted_origin"],
      winners: [],
      rejections: ["east/ns/a:untrusted_origin"],
    },
    {
      name: "rollback: the control cluster's own older version is refused",
      controlCluster: "hub",
      before: [putOf(cachedEntry("hub", "ns/a", versionAt(2), 2))],
      change: putOf(hubA1),
      raw: REFUSED,
      effective: "-",
      newlyRejected: ["hub/ns/a:rollback"],
      winners: ["ns/a<-hub@2"],
      rejections: ["hub/ns/a:rollback"],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const { index, newlyRejected } = indexOf(c.controlCluster);
      for (const change of c.before ?? []) index.apply(change);
      newlyRejected.length = 0;
      const record = index.apply(c.change);
      if (c.raw === REFUSED) {
        expect(record).toBeUndefined();
      } else {
        expect(record?.revision).toBe(c.change.revision);
        expect(eventText(record?.raw)).toBe(c.raw);
        expect(eventText(record?.effective)).toBe(c.effective);
        if (c.change.type === "put") expect(record?.raw.entry).toBe(c.change.entry);
      }
      expect(newlyRejected).toEqual(c.newlyRejected ?? []);
      const winners = held(index).winners;
      expect({
        ...held(index),
        winners: c.winners.some((w) => w.includes("@")) ? withRevision(index) : winners,
      }).toEqual({
        winners: c.winners,
        conflicts: c.conflicts ?? [],
        rejections: c.rejections ?? [],
      });
      expect(index.stats().conflicts).toBe((c.conflicts ?? []).length);
    });
  }
});

describe("projection index: resync (stale-then-sweep)", () => {
  const hubB = cachedEntry("hub", "ns/b", versionAt(1), 4);
  const cases: {
    name: string;
    before: CacheChange[];
    listing: CachedProjection[];
    records: string[];
    winners: string[];
  }[] = [
    {
      name: "into an empty index: a put for each listed entry",
      before: [],
      listing: [hubA1, eastA2],
      records: ["upsert:hub/ns/a@10 upsert:hub/ns/a@10", "upsert:east/ns/a@10 upsert:east/ns/a@10"],
      winners: ["ns/a<-east"],
    },
    {
      name: "the same listing again records nothing",
      before: [putOf(hubA1), putOf(eastA2)],
      listing: [hubA1, eastA2],
      records: [],
      winners: ["ns/a<-east"],
    },
    {
      name: "an entry at another modification revision is put again",
      before: [putOf(hubA1), putOf(hubB)],
      listing: [cachedEntry("hub", "ns/a", versionAt(1), 7), hubB],
      records: ["upsert:hub/ns/a@10 upsert:hub/ns/a@10"],
      winners: ["ns/a<-hub", "ns/b<-hub"],
    },
    {
      name: "entries the listing lacks are swept, after the puts",
      before: [putOf(hubA1), putOf(eastA2), putOf(hubB)],
      listing: [hubA1, cachedEntry("west", "ns/c", versionAt(1), 8)],
      records: [
        "upsert:west/ns/c@10 upsert:west/ns/c@10",
        "delete:east/ns/a@10 upsert:hub/ns/a@10",
        "delete:hub/ns/b@10 delete:hub/ns/b@10",
      ],
      winners: ["ns/a<-hub", "ns/c<-west"],
    },
    {
      name: "an empty listing sweeps everything",
      before: [putOf(hubA1), putOf(westA0)],
      listing: [],
      records: [
        "delete:hub/ns/a@10 upsert:west/ns/a@10",
        "delete:west/ns/a@10 delete:west/ns/a@10",
      ],
      winners: [],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const { index } = indexOf();
      for (const change of c.before) index.apply(change);
      const heldBefore = new Map(index.entries().map((e) => [`${e.origin}/${e.service}`, e]));
      const records = index.resync(c.listing, 10);
      expect(records.map((r) => `${eventText(r.raw)} ${eventText(r.effective)}`)).toEqual(
        c.records,
      );
      expect(
        index.snapshot(undefined, "effective").map((e) => `${e.service}<-${e.origin}`),
      ).toEqual(c.winners);
      // The index now holds exactly the listing; an unchanged entry stays the object held.
      const now = index.entries();
      expect(now.map((e) => `${e.origin}/${e.service}@${e.modRevision}`).sort()).toEqual(
        c.listing.map((e) => `${e.origin}/${e.service}@${e.modRevision}`).sort(),
      );
      for (const entry of now) {
        const before = heldBefore.get(`${entry.origin}/${entry.service}`);
        if (before?.modRevision === entry.modRevision) expect(entry).toBe(before);
      }
    });
  }
});

describe("projection index: a re-listing meets a rollback", () => {
  it("an older value listed for an origin's service is refused: no record, the newer one stays held and served", () => {
    const { index, newlyRejected } = indexOf();
    index.apply(putOf(eastA2));
    const old = cachedEntry("east", "ns/a", versionAt(1), 9);
    expect(index.resync([old, hubA1], 10).map((r) => eventText(r.raw))).toEqual([
      "upsert:hub/ns/a@10",
    ]);
    expect(index.get("east", "ns/a")).toBe(eastA2);
    expect(withRevision(index)).toEqual(["ns/a<-east@2"]);
    expect(newlyRejected).toEqual(["east/ns/a:rollback"]);
    expect(index.stats().rejected.get("rollback")).toBe(1);
    // The same listing again: refused again, not reported again, nothing swept.
    expect(index.resync([old, hubA1], 11)).toEqual([]);
    expect(newlyRejected).toEqual(["east/ns/a:rollback"]);
    expect(index.rejections().map((r) => r.message)).toEqual([
      `projection of ns/a from east has version ${versionAt(1)}, older than ${versionAt(2)} this importer already accepted: a replayed old value (or the origin's clock went back); the newer one stays`,
    ]);
  });
});

describe("projection index: snapshot", () => {
  // ns/a: east wins over hub; ns/b: hub only; ns/c: only a rejected value; ns/d: west only.
  const state: CacheChange[] = [
    putOf(cachedEntry("west", "ns/d", versionAt(1), 1)),
    putOf(cachedEntry("hub", "ns/b", versionAt(1), 2)),
    putOf(hubA1),
    putOf(eastA2),
    putOf(cachedEntry("hub", "ns/c", "never", 5)),
  ];
  const cases: {
    name: string;
    services?: string[];
    view: CacheView;
    entries: string[];
  }[] = [
    {
      name: "unfiltered, every origin",
      view: "all",
      entries: ["ns/a<-east", "ns/a<-hub", "ns/b<-hub", "ns/c<-hub", "ns/d<-west"],
    },
    {
      name: "unfiltered, effective",
      view: "effective",
      entries: ["ns/a<-east", "ns/b<-hub", "ns/d<-west"],
    },
    {
      name: "an empty filter is no filter",
      services: [],
      view: "effective",
      entries: ["ns/a<-east", "ns/b<-hub", "ns/d<-west"],
    },
    {
      name: "filtered, every origin, by service then origin whatever the filter's order",
      services: ["ns/d", "ns/a"],
      view: "all",
      entries: ["ns/a<-east", "ns/a<-hub", "ns/d<-west"],
    },
    {
      name: "filtered, effective",
      services: ["ns/d", "ns/a"],
      view: "effective",
      entries: ["ns/a<-east", "ns/d<-west"],
    },
    {
      name: "a rejected value is in every origin's view only",
      services: ["ns/c"],
      view: "all",
      entries: ["ns/c<-hub"],
    },
    {
      name: "a rejected-only service has no effective entry",
      services: ["ns/c"],
      view: "effective",
      entries: [],
    },
    {
      name: "unknown services yield nothing",
      services: ["ns/zzz", "other/x"],
      view: "all",
      entries: [],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const { index } = indexOf();
      for (const change of state) index.apply(change);
      const services = c.services === undefined ? undefined : new Set(c.services);
      const entries = index.snapshot(services, c.view);
      expect(entries.map((e) => `${e.service}<-${e.origin}`)).toEqual(c.entries);
      // Bytes pass through as they are, never decoded.
      for (const entry of entries) expect(entry.value).toBe(UNDECODABLE);
    });
  }
});

describe("projection index: stats, entries, upsertRecord", () => {
  const cases: {
    name: string;
    controlCluster?: string;
    changes: CacheChange[];
    stats: { projections: number; effectiveServices: number; conflicts: number };
    rejected: Record<string, number>;
  }[] = [
    {
      name: "empty",
      changes: [],
      stats: { projections: 0, effectiveServices: 0, conflicts: 0 },
      rejected: {},
    },
    {
      name: "federated, one conflict",
      changes: [putOf(hubA1), putOf(eastA2), putOf(cachedEntry("hub", "ns/b", versionAt(1), 3))],
      stats: { projections: 3, effectiveServices: 2, conflicts: 1 },
      rejected: {},
    },
    {
      name: "control cluster: rejections by reason, no conflicts",
      controlCluster: "hub",
      changes: [
        putOf(hubA1),
        putOf(eastA2),
        putOf(cachedEntry("west", "ns/b", versionAt(1), 3)),
        putOf(cachedEntry("hub", "ns/c", "bad", 4)),
      ],
      stats: { projections: 4, effectiveServices: 1, conflicts: 0 },
      rejected: { untrusted_origin: 2, invalid_version: 1 },
    },
    {
      name: "deletes are counted out",
      changes: [
        putOf(hubA1),
        putOf(eastA2),
        putOf(cachedEntry("hub", "ns/c", "bad", 4)),
        deleteOf("east", "ns/a", 5),
        deleteOf("hub", "ns/c", 6),
      ],
      stats: { projections: 1, effectiveServices: 1, conflicts: 0 },
      rejected: {},
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const { index } = indexOf(c.controlCluster);
      for (const change of c.changes) index.apply(change);
      const { rejected, ...counts } = index.stats();
      expect(counts).toEqual(c.stats);
      expect(Object.fromEntries(rejected)).toEqual(c.rejected);
      expect(index.entries()).toEqual(index.snapshot(undefined, "all"));
    });
  }

  it("upsertRecord tells the winner from a loser, and changes nothing", () => {
    const { index } = indexOf();
    index.apply(putOf(hubA1));
    index.apply(putOf(eastA2));
    const winner = index.upsertRecord(eastA2, 7);
    expect([eventText(winner.raw), eventText(winner.effective)]).toEqual([
      "upsert:east/ns/a@7",
      "upsert:east/ns/a@7",
    ]);
    const loser = index.upsertRecord(hubA1, 7);
    expect([eventText(loser.raw), eventText(loser.effective)]).toEqual(["upsert:hub/ns/a@7", "-"]);
    // Only this object counts as the winner, not an equal copy of it.
    expect(index.upsertRecord({ ...eastA2 }, 7).effective).toBeUndefined();
    expect(held(index).winners).toEqual(["ns/a<-east"]);
  });
});

describe("projection index: get, originSize, and a resync's sweep filter", () => {
  it("counts each origin's entries through puts, replacements and deletes", () => {
    const { index } = indexOf();
    index.apply(putOf(hubA1));
    index.apply(putOf(cachedEntry("hub", "ns/b", versionAt(1), 4)));
    index.apply(putOf(cachedEntry("hub", "ns/b", versionAt(2), 5))); // a replacement
    index.apply(putOf(eastA2));
    index.apply(deleteOf("west", "ns/a", 6)); // not there
    expect([index.originSize("hub"), index.originSize("east"), index.originSize("west")]).toEqual([
      2, 1, 0,
    ]);
    expect(index.get("hub", "ns/b")?.modRevision).toBe(5);
    expect(index.get("west", "ns/a")).toBeUndefined();
    index.apply(deleteOf("hub", "ns/a", 7));
    index.apply(deleteOf("hub", "ns/b", 8));
    expect(index.originSize("hub")).toBe(0);
  });

  it("a resync deletes only the stale entries its sweep returns; the rest stay as they are", () => {
    const { index } = indexOf();
    const hubB = cachedEntry("hub", "ns/b", versionAt(1), 4);
    for (const entry of [hubA1, eastA2, hubB]) index.apply(putOf(entry));
    const offered: string[] = [];
    const records = index.resync([eastA2], 10, (stale) => {
      offered.push(...stale.map((e) => `${e.origin}/${e.service}`));
      return stale.filter((e) => e.service === "ns/b");
    });
    expect(offered.sort()).toEqual(["hub/ns/a", "hub/ns/b"]);
    expect(records.map((r) => eventText(r.raw))).toEqual(["delete:hub/ns/b@10"]);
    expect(index.get("hub", "ns/a")).toBe(hubA1);
    expect(index.originSize("hub")).toBe(1);
  });
});

describe("projection index: unfiltered snapshots are shared until the next change", () => {
  const hubB = cachedEntry("hub", "ns/b", versionAt(4), 4);
  it.each(["effective", "all"] as CacheView[])("%s view", (view) => {
    const { index } = indexOf();
    index.apply(putOf(hubA1));
    index.apply(putOf(eastA2));
    const first = index.snapshot(undefined, view);
    // Every unfiltered caller until the next change gets the same array.
    expect(index.snapshot(undefined, view)).toBe(first);
    expect(index.snapshot(new Set(), view)).toBe(first);
    // A filtered snapshot is its own.
    const filtered = index.snapshot(new Set(["ns/a"]), view);
    expect(filtered).not.toBe(first);
    expect(filtered).toEqual(first);

    index.apply(putOf(hubB));
    const second = index.snapshot(undefined, view);
    expect(second).not.toBe(first);
    expect(second.map((e) => `${e.service}<-${e.origin}`)).toContain("ns/b<-hub");
    // The array handed out before the change still says what it said.
    expect(first.map((e) => e.service)).not.toContain("ns/b");

    index.apply(deleteOf("hub", "ns/b", 5));
    expect(index.snapshot(undefined, view).map((e) => e.service)).not.toContain("ns/b");
  });
});
