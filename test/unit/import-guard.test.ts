/**
 * The registrar cache's guard against silent loss, through the cache's
 * contents (synchronous, no store, no timers): applied deletes are counted
 * and logged once per batch, a rollback is refused (a `rollback` rejection,
 * never applied, never the end of a hold); a mass disappearance of one
 * origin's projections (one store revision, or one re-listing) is held: the
 * entries stay in every view, no DELETE reaches a subscriber; the origin
 * writing a held projection again releases it, and an operator's release
 * applies the rest.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import { createImportPolicy } from "../../services/common/import-policy.js";
import {
  type CacheContents,
  createCacheContents,
} from "../../services/registrar/cache/cache-contents.js";
import type { CacheEvent } from "../../services/registrar/cache/projection-index.js";
import type { StoredProjection, StoreEvent } from "../../services/registrar/store/config-store.js";
import { eventText } from "../support/cache-entries.js";
import { captureLogger } from "../support/capture-logger.js";
import { versionAt } from "../support/projections.js";

/** A stored projection of `service` from `origin` at `version`, written at `modRevision`. */
function stored(
  origin: string,
  service: string,
  version: string,
  modRevision: number,
): StoredProjection {
  const projection = create(ServiceConfigProjectionSchema, {
    service,
    version,
    originCluster: origin,
  });
  return { origin, service, projection, value: new Uint8Array(), version, modRevision };
}

const put = (origin: string, service: string, version: string, revision: number): StoreEvent => ({
  type: "put",
  entry: stored(origin, service, version, revision),
  revision,
});
const del = (origin: string, service: string, revision: number): StoreEvent => ({
  type: "delete",
  origin,
  service,
  revision,
});
const services = (n: number) =>
  Array.from({ length: n }, (_, i) => `ns/s${String(i).padStart(2, "0")}`);

/**
 * Contents (threshold: more than 50% and at least 3) that listed `listing`
 * at revision 100, with one subscriber to every origin's view, the events it
 * received, the counts the observer got, and the log lines.
 */
function contentsWith(listing: StoredProjection[]) {
  const captured = captureLogger();
  const counted: string[] = [];
  const contents: CacheContents = createCacheContents({
    policy: createImportPolicy(),
    historyLimit: 1000,
    logger: captured.logger,
    massDelete: { fraction: 0.5, minCount: 3 },
    now: () => Date.UTC(2026, 0, 1),
    importObserver: {
      onDeletes: (origin, count) => counted.push(`deletes:${origin}:${count}`),
    },
  });
  contents.resync(listing, 100, true);
  const received: CacheEvent[] = [];
  contents.subscribe({
    view: "all",
    resumeRevision: 0,
    onEvents: (events) => received.push(...events),
    onClose: () => undefined,
  });
  const served = () => contents.snapshot(undefined, "all").map((e) => `${e.origin}/${e.service}`);
  return { contents, received, counted, captured, served };
}

/** East's `n` projections and west's two, listed. */
function eastAndWest(n: number): StoredProjection[] {
  return [
    ...services(n).map((s, i) => stored("east", s, versionAt(1), 10 + i)),
    stored("west", "ns/w0", versionAt(1), 90),
    stored("west", "ns/w1", versionAt(1), 91),
  ];
}

describe("import guard: applied deletes and rollbacks", () => {
  it("applies, counts and logs (once per batch) deletes below the threshold; a rollback is refused, not applied", () => {
    const t = contentsWith(eastAndWest(10));
    t.contents.applyEvents([
      del("east", "ns/s00", 101),
      del("east", "ns/s01", 102), // one key per revision: the exporter's unexports
      put("west", "ns/w0", versionAt(0), 103), // older than the held versionAt(1): refused
      del("west", "ns/w1", 104),
      del("west", "ns/absent", 105), // not held: a raw delete, not counted
    ]);
    expect(t.received.map(eventText)).toEqual([
      "delete:east/ns/s00@101",
      "delete:east/ns/s01@102",
      "delete:west/ns/w1@104",
      "delete:west/ns/absent@105",
    ]);
    expect(t.counted).toEqual(["deletes:east:2", "deletes:west:1"]);
    const deletes = t.captured.withMessage("applied deletes of imported projections");
    expect(deletes.map((l) => [l.origin, l.deletes, l.services])).toEqual([
      ["east", 2, ["ns/s00", "ns/s01"]],
      ["west", 1, ["ns/w1"]],
    ]);
    expect(t.contents.index.rejections().map((r) => r.reason)).toEqual(["rollback"]);
    const refused = t.captured.lines.filter((l) => String(l.msg).includes("older than"));
    expect(refused.map((l) => [l.origin, l.service, l.reason])).toEqual([
      ["west", "ns/w0", "rollback"],
    ]);
    expect(t.contents.holds()).toEqual([]);
  });

  it("an origin's only projections deleted at once (below the minimum) are applied", () => {
    const t = contentsWith([stored("solo", "ns/only", versionAt(1), 5)]);
    t.contents.applyEvents([del("solo", "ns/only", 101)]);
    expect(t.received.map(eventText)).toEqual(["delete:solo/ns/only@101"]);
    expect(t.contents.holds()).toEqual([]);
    expect(t.counted).toEqual(["deletes:solo:1"]);
  });
});

describe("import guard: a mass disappearance is held", () => {
  it("holds an origin wiped in one revision: still served, no DELETE published, logged; other origins apply", () => {
    const t = contentsWith(eastAndWest(10));
    t.contents.applyEvents([
      ...services(10).map((s) => del("east", s, 101)),
      del("west", "ns/w0", 101),
    ]);
    expect(t.received.map(eventText)).toEqual(["delete:west/ns/w0@101"]);
    expect(t.served()).toEqual([...services(10).map((s) => `east/${s}`), "west/ns/w1"]);
    expect(t.contents.snapshot(new Set(["ns/s03"]), "effective").map((e) => e.origin)).toEqual([
      "east",
    ]);
    expect(t.contents.revision).toBe(101);
    const [hold] = t.contents.holds();
    expect(hold).toMatchObject({ origin: "east", revision: 101, since: Date.UTC(2026, 0, 1) });
    expect(hold?.services.size).toBe(10);
    expect(hold?.reason).toBe(
      "10 of its 10 projections deleted in one store revision at revision 101; threshold more than 50% and at least 3",
    );
    expect(t.counted).toEqual(["deletes:west:1"]);
    const warned = t.captured.lines.filter((l) =>
      String(l.msg).startsWith("holding a mass deletion"),
    );
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ level: 40, origin: "east", held: 10, revision: 101 });
  });

  it("judges each revision of a batch apart: single deletes in a row are applied", () => {
    const t = contentsWith(eastAndWest(4));
    t.contents.applyEvents(services(4).map((s, i) => del("east", s, 101 + i)));
    expect(t.received).toHaveLength(4);
    expect(t.contents.holds()).toEqual([]);
  });

  it("releases a held service when its origin writes it again, and ends the hold when all are back", () => {
    const t = contentsWith(eastAndWest(4));
    t.contents.applyEvents(services(4).map((s) => del("east", s, 101)));
    t.contents.applyEvents([put("east", "ns/s00", versionAt(2), 102)]);
    expect(t.received.map(eventText)).toEqual(["upsert:east/ns/s00@102"]);
    expect(t.contents.holds()[0]?.services.size).toBe(3);
    expect(t.served()).toHaveLength(6);
    t.contents.applyEvents(
      services(4)
        .slice(1)
        .map((s) => put("east", s, versionAt(2), 103)),
    );
    expect(t.contents.holds()).toEqual([]);
    expect(t.received).toHaveLength(4);
    expect(t.received.every((e) => e.type === "upsert")).toBe(true);
    expect(
      t.captured.withMessage("hold over: the origin wrote every held projection again"),
    ).toHaveLength(1);
    // A later delete is judged afresh: one of four is applied.
    t.contents.applyEvents([del("east", "ns/s00", 104)]);
    expect(t.received.at(-1)?.type).toBe("delete");
  });

  it("an old value written back into a held service is refused and does not end the hold, by event or by re-listing", () => {
    const t = contentsWith(eastAndWest(4));
    t.contents.applyEvents(services(4).map((s) => del("east", s, 101)));
    t.contents.applyEvents([put("east", "ns/s00", versionAt(0), 102)]); // held at versionAt(1)
    expect(t.received).toEqual([]);
    expect(t.contents.holds()[0]?.services.size).toBe(4);
    const listing = [
      stored("east", "ns/s00", versionAt(0), 102),
      ...eastAndWest(0), // west's two
    ];
    t.contents.resync(listing, 110, false);
    expect(t.received).toEqual([]);
    expect(t.contents.holds()[0]?.services.size).toBe(4);
    expect(t.served()).toHaveLength(6);
    expect(t.contents.index.rejections().map((r) => `${r.candidate.service}:${r.reason}`)).toEqual([
      "ns/s00:rollback",
    ]);
  });

  it("an operator's release applies the held deletes at the current revision, and resumes there get a snapshot", () => {
    const t = contentsWith(eastAndWest(4));
    t.contents.applyEvents(services(4).map((s) => del("east", s, 101)));
    t.contents.applyEvents([put("west", "ns/w0", versionAt(2), 102)]);
    expect(t.contents.releaseHolds("west")).toBe(0);
    expect(t.contents.releaseHolds()).toBe(4);
    expect(t.received.map(eventText)).toEqual([
      "upsert:west/ns/w0@102",
      ...services(4).map((s) => `delete:east/${s}@102`),
    ]);
    expect(t.served()).toEqual(["west/ns/w0", "west/ns/w1"]);
    expect(t.contents.holds()).toEqual([]);
    expect(t.counted).toEqual(["deletes:east:4"]);
    // A subscriber at 102 may have missed some of the deletes written at 102: a snapshot.
    const resumed = t.contents.subscribe({
      view: "all",
      resumeRevision: 102,
      onEvents: () => undefined,
      onClose: () => undefined,
    });
    expect(resumed.initial.kind).toBe("snapshot");
    expect(t.contents.releaseHolds()).toBe(0);
  });

  it("holds what a re-listing lacks of one origin, and keeps holding it through later re-listings", () => {
    const t = contentsWith(eastAndWest(6));
    const west = eastAndWest(6).filter((e) => e.origin === "west");
    const kept = stored("east", "ns/s00", versionAt(1), 10); // one of east's six is still there
    t.contents.resync([kept, ...west], 120, false);
    expect(t.received).toEqual([]);
    expect(t.served()).toHaveLength(8);
    expect(t.contents.holds()[0]?.reason).toContain(
      "5 of its 6 projections missing from a re-listing",
    );
    // The next re-listing still lacks them: still held, nothing published.
    t.contents.resync([kept, ...west], 130, false);
    expect(t.received).toEqual([]);
    // West loses one of two in a re-listing: below the minimum, applied.
    t.contents.resync([kept, west[0] as StoredProjection], 140, false);
    expect(t.received.map(eventText)).toEqual(["delete:west/ns/w1@140"]);
    // A re-listing with a held one back (written again) releases it.
    t.contents.resync(
      [kept, stored("east", "ns/s01", versionAt(3), 141), west[0] as StoredProjection],
      150,
      false,
    );
    expect(t.received.map(eventText).at(-1)).toBe("upsert:east/ns/s01@150");
    expect(t.contents.holds()[0]?.services.size).toBe(4);
  });

  it("does nothing of the sort with the guard off", () => {
    const captured = captureLogger();
    const contents = createCacheContents({
      policy: createImportPolicy(),
      historyLimit: 10,
      logger: captured.logger,
      massDelete: { fraction: 1, minCount: 1 },
    });
    contents.resync(
      services(20).map((s, i) => stored("east", s, versionAt(1), i + 1)),
      50,
      true,
    );
    contents.applyEvents(services(20).map((s) => del("east", s, 51)));
    expect(contents.snapshot(undefined, "all")).toEqual([]);
    expect(contents.holds()).toEqual([]);
  });
});
