/**
 * The change log, table-driven and synchronous: no store, no timers. Records
 * are named by revision (and service where it matters); what is checked is
 * what the log keeps, what it replays and when it refuses to.
 */
import { describe, expect, it } from "vitest";
import {
  type ChangeLog,
  createChangeLog,
  type EventFilter,
  eventsFor,
} from "../../services/registrar/cache/change-log.js";
import type { ChangeRecord } from "../../services/registrar/cache/projection-index.js";
import { eventText, recordOf } from "../support/cache-entries.js";

/** Records of these revisions, one per element (a repeated revision is a batch). */
function records(...revisions: number[]): ChangeRecord[] {
  return revisions.map((revision, i) => recordOf(revision, `ns/s${i}`));
}

/** A log of `limit`, started at `start`, that remembered `batches` in turn. */
function logOf(limit: number, start: number, batches: number[][]): ChangeLog {
  const log = createChangeLog({ limit });
  log.restart(start, []);
  for (const batch of batches) log.remember(records(...batch));
  return log;
}

/** The revisions a resume from `resume` replays. */
function replayed(log: ChangeLog, resume: number): number[] {
  return log.recordsToReplay(resume).map((r) => r.revision);
}

describe("change log: remember and trim", () => {
  const cases: {
    name: string;
    limit: number;
    batches: number[][];
    kept: number[];
    replayFrom: number;
  }[] = [
    {
      name: "up to twice the limit nothing is trimmed",
      limit: 2,
      batches: [[1], [2], [3], [4]],
      kept: [1, 2, 3, 4],
      replayFrom: 0,
    },
    {
      name: "past twice the limit it trims back to the limit",
      limit: 2,
      batches: [[1], [2], [3], [4], [5]],
      kept: [4, 5],
      replayFrom: 3,
    },
    {
      name: "a trim never splits a revision: the batch at the cut is kept whole",
      limit: 2,
      batches: [
        [1, 1],
        [2, 2, 2],
      ],
      kept: [2, 2, 2],
      replayFrom: 1,
    },
    {
      name: "a cut inside an older batch keeps that batch whole (the cut moves back)",
      limit: 2,
      batches: [[1, 1, 1, 1], [2]],
      kept: [1, 1, 1, 1, 2],
      replayFrom: 0,
    },
    {
      name: "a log of one revision is not trimmed at all",
      limit: 1,
      batches: [[3, 3, 3]],
      kept: [3, 3, 3],
      replayFrom: 0,
    },
    {
      name: "one call of many records trims like many calls",
      limit: 2,
      batches: [[1, 2, 3, 4, 5, 6]],
      kept: [5, 6],
      replayFrom: 4,
    },
    {
      name: "records of one revision across calls are still one revision",
      limit: 2,
      batches: [[1], [2], [3], [3], [3]],
      kept: [3, 3, 3],
      replayFrom: 2,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const log = logOf(c.limit, 0, c.batches);
      expect(log.size).toBe(c.kept.length);
      expect(log.replayFrom).toBe(c.replayFrom);
      // Everything held, replayed from the start of what it holds.
      expect(replayed(log, c.replayFrom)).toEqual(
        c.kept.filter((r) => r > c.replayFrom || c.kept.filter((x) => x === r).length > 1),
      );
    });
  }

  it("takes a re-list larger than a call's argument limit", () => {
    const log = createChangeLog({ limit: 500_000 });
    log.restart(1, []);
    const many = Array.from({ length: 300_000 }, () => recordOf(2));
    log.remember(many);
    expect(log.size).toBe(300_000);
  });
});

describe("change log: replay", () => {
  // Started at 4, then 5, a batch of three at 6, nothing at 7, then 8 and 9.
  const log = logOf(100, 4, [[5], [6, 6, 6], [8], [9]]);
  const cases: { name: string; resume: number; current?: number; replay?: number[] }[] = [
    { name: "from the start revision: everything", resume: 4, replay: [5, 6, 6, 6, 8, 9] },
    { name: "from a revision of one record: what follows it", resume: 5, replay: [6, 6, 6, 8, 9] },
    {
      name: "from a revision of several records: that revision again, then what follows",
      resume: 6,
      replay: [6, 6, 6, 8, 9],
    },
    { name: "from a revision with no record: what follows it", resume: 7, replay: [8, 9] },
    { name: "from the last record's revision: nothing", resume: 9, replay: [] },
    { name: "before the start revision: cannot replay", resume: 3 },
    { name: "zero asks for a snapshot", resume: 0 },
    { name: "after the current revision: cannot replay", resume: 10 },
    {
      name: "a current revision past the last record (quiet revisions): replays up to it",
      resume: 10,
      current: 12,
      replay: [],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const replayable = log.canReplay(c.resume, c.current ?? 9);
      expect(replayable).toBe(c.replay !== undefined);
      if (c.replay !== undefined) expect(replayed(log, c.resume)).toEqual(c.replay);
    });
  }

  it("a resume older than a trim cannot replay; one at the trim point can", () => {
    const trimmed = logOf(2, 0, [[1], [2], [3], [4], [5]]);
    expect(trimmed.replayFrom).toBe(3);
    expect(trimmed.canReplay(2, 5)).toBe(false);
    expect(trimmed.canReplay(3, 5)).toBe(true);
    expect(replayed(trimmed, 3)).toEqual([4, 5]);
  });
});

describe("change log: restart", () => {
  const cases: { name: string; atRevision: number; kept: number[]; replay: number[] }[] = [
    { name: "no records at the listing's revision", atRevision: 0, kept: [], replay: [] },
    {
      name: "one record is not kept (it would not be resent)",
      atRevision: 1,
      kept: [],
      replay: [],
    },
    {
      name: "several records are kept, and resent",
      atRevision: 3,
      kept: [9, 9, 9],
      replay: [9, 9, 9],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const log = logOf(100, 2, [[3], [4, 4]]);
      log.restart(9, records(...Array<number>(c.atRevision).fill(9)));
      expect(log.replayFrom).toBe(9);
      expect(log.size).toBe(c.kept.length);
      expect(log.canReplay(8, 9)).toBe(false);
      expect(log.canReplay(9, 9)).toBe(true);
      expect(replayed(log, 9)).toEqual(c.replay);
    });
  }
});

describe("change log: seal", () => {
  it("makes every resume at or before the sealed revision a snapshot, and replays after it", () => {
    const log = logOf(100, 2, [[3], [4, 4], [5]]);
    log.seal(5);
    expect(log.replayFrom).toBe(6);
    expect(log.size).toBe(0);
    for (const resume of [2, 4, 5]) expect(log.canReplay(resume, 5)).toBe(false);
    log.remember(records(6, 7));
    expect(log.canReplay(5, 7)).toBe(false);
    expect(log.canReplay(6, 7)).toBe(true);
    expect(replayed(log, 6)).toEqual([7]);
  });

  it("never moves replayFrom back", () => {
    const log = logOf(100, 10, [[11]]);
    log.seal(4);
    expect(log.replayFrom).toBe(10);
    expect(log.size).toBe(1);
  });
});

describe("change log: events a reader sees", () => {
  const mixed = [
    recordOf(1, "ns/a"),
    recordOf(2, "ns/a", { origin: "east", effective: false }),
    recordOf(3, "ns/b", { type: "delete" }),
  ];
  const cases: { name: string; filter: EventFilter; events: string[] }[] = [
    {
      name: "every origin, every service",
      filter: { view: "all" },
      events: ["upsert:hub/ns/a@1", "upsert:east/ns/a@2", "delete:hub/ns/b@3"],
    },
    {
      name: "effective skips records that did not move a winner",
      filter: { view: "effective" },
      events: ["upsert:hub/ns/a@1", "delete:hub/ns/b@3"],
    },
    {
      name: "an empty service set is every service",
      filter: { view: "effective", services: new Set() },
      events: ["upsert:hub/ns/a@1", "delete:hub/ns/b@3"],
    },
    {
      name: "filtered by service",
      filter: { view: "all", services: new Set(["ns/a"]) },
      events: ["upsert:hub/ns/a@1", "upsert:east/ns/a@2"],
    },
    {
      name: "filtered and effective",
      filter: { view: "effective", services: new Set(["ns/b", "ns/x"]) },
      events: ["delete:hub/ns/b@3"],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(eventsFor(mixed, c.filter).map(eventText)).toEqual(c.events);
    });
  }
});
