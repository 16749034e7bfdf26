/**
 * The registrar's held deletes: the plan (which deletes that arrive together
 * are a mass disappearance), the holds container, and the degraded reason,
 * table-driven and synchronous.
 */
import { describe, expect, it } from "vitest";
import type { MassDeleteThreshold } from "../../services/common/import-loss.js";
import {
  createDeleteHolds,
  type DeleteRef,
  describeHolds,
  planDeletes,
} from "../../services/registrar/cache/delete-holds.js";

const threshold: MassDeleteThreshold = { fraction: 0.5, minCount: 3 };

/** `n` deletes of `origin`, services `ns/s0`…. */
function deletesOf(origin: string, n: number, from = 0): DeleteRef[] {
  return Array.from({ length: n }, (_, i) => ({ origin, service: `ns/s${from + i}` }));
}

describe("planDeletes", () => {
  const cases: {
    name: string;
    deletes: DeleteRef[];
    held: Record<string, number>;
    hold: Record<string, number>;
    apply: number;
  }[] = [
    {
      name: "one delete of a big origin is applied",
      deletes: deletesOf("east", 1),
      held: { east: 40 },
      hold: {},
      apply: 1,
    },
    {
      name: "an origin wiped at once is held",
      deletes: deletesOf("east", 40),
      held: { east: 40 },
      hold: { east: 40 },
      apply: 0,
    },
    {
      name: "an origin's only projection (1 of 1) is applied: below the minimum",
      deletes: deletesOf("east", 1),
      held: { east: 1 },
      hold: {},
      apply: 1,
    },
    {
      name: "all of a small origin below the minimum is applied",
      deletes: deletesOf("east", 2),
      held: { east: 2 },
      hold: {},
      apply: 2,
    },
    {
      name: "half exactly is applied; more than half is held",
      deletes: [...deletesOf("east", 5), ...deletesOf("west", 6)],
      held: { east: 10, west: 10 },
      hold: { west: 6 },
      apply: 5,
    },
    {
      name: "origins are judged apart: a wiped one is held, the other applied",
      deletes: [...deletesOf("hub", 4), ...deletesOf("east", 1), ...deletesOf("west", 3)],
      held: { hub: 4, east: 1, west: 100 },
      hold: { hub: 4 },
      apply: 4,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const plan = planDeletes(c.deletes, (origin) => c.held[origin] ?? 0, threshold);
      expect(
        Object.fromEntries([...plan.hold].map(([origin, h]) => [origin, h.services.length])),
      ).toEqual(c.hold);
      expect(plan.apply).toHaveLength(c.apply);
      for (const [origin, h] of plan.hold) expect(h.of).toBe(c.held[origin]);
      // What is applied is what is not held, as the same objects, in order.
      expect(plan.apply).toEqual(c.deletes.filter((d) => !plan.hold.has(d.origin)));
    });
  }
});

describe("delete holds", () => {
  it("holds, merges a second hold of an origin, releases service by service, and ends", () => {
    const holds = createDeleteHolds();
    holds.hold("east", ["ns/a", "ns/b"], { revision: 7, now: 1_000, reason: "wiped" });
    holds.hold("east", ["ns/b", "ns/c"], { revision: 9, now: 2_000, reason: "again" });
    expect(holds.size).toBe(3);
    expect(holds.isHeld("east", "ns/c")).toBe(true);
    expect(holds.isHeld("west", "ns/a")).toBe(false);
    const [east] = holds.list();
    expect(east).toMatchObject({ origin: "east", since: 1_000, revision: 7, reason: "wiped" });
    expect([...(east?.services ?? [])]).toEqual(["ns/a", "ns/b", "ns/c"]);
    expect(holds.release("east", "ns/x")).toBeUndefined();
    expect(holds.release("west", "ns/a")).toBeUndefined();
    expect(holds.release("east", "ns/a")).toBe("released");
    expect(holds.release("east", "ns/b")).toBe("released");
    expect(holds.release("east", "ns/c")).toBe("ended");
    expect(holds.size).toBe(0);
    expect(holds.list()).toEqual([]);
  });

  it("takes one origin's holds, or every one, and a list is a copy", () => {
    const holds = createDeleteHolds();
    holds.hold("west", ["ns/a"], { revision: 1, now: 1, reason: "r" });
    holds.hold("east", ["ns/a", "ns/b"], { revision: 1, now: 1, reason: "r" });
    const listed = holds.list();
    (listed[0]?.services as Set<string> | undefined)?.clear();
    expect(holds.size).toBe(3);
    expect(holds.take("west").map((h) => h.origin)).toEqual(["west"]);
    expect(holds.size).toBe(2);
    expect(holds.take("nobody")).toEqual([]);
    expect(holds.take().map((h) => h.origin)).toEqual(["east"]);
    expect(holds.size).toBe(0);
  });
});

describe("describeHolds", () => {
  it("is undefined without holds, and names each origin, count, start and reason", () => {
    expect(describeHolds([])).toBeUndefined();
    const holds = createDeleteHolds();
    holds.hold("east", ["ns/a", "ns/b"], {
      revision: 7,
      now: Date.UTC(2026, 0, 1),
      reason: "2 of its 2 projections deleted in one store revision",
    });
    expect(describeHolds(holds.list())).toBe(
      "2 deletes of origin east held since 2026-01-01T00:00:00.000Z (2 of its 2 projections deleted in one store revision); still served. Released by the origin writing them again, or by an operator (SIGUSR2 to the registrar)",
    );
  });
});
