import { describe, expect, it } from "vitest";
import { decideFairShare } from "../../services/registrar/server/fair-share.js";
import { createHolderLedger } from "../../services/registrar/server/holder-ledger.js";

describe("decideFairShare", () => {
  it.each([
    { name: "room left", total: 2, limit: 3, own: 2, heaviest: 2, decision: "admit" },
    {
      name: "full, a newcomer against a heavy holder",
      total: 3,
      limit: 3,
      own: 0,
      heaviest: 3,
      decision: "preempt",
    },
    {
      name: "full, a newcomer against holders of two",
      total: 4,
      limit: 4,
      own: 0,
      heaviest: 2,
      decision: "preempt",
    },
    {
      name: "full, a holder of one asks (no churn among many light holders)",
      total: 3,
      limit: 3,
      own: 1,
      heaviest: 3,
      decision: "refuse",
    },
    {
      name: "full, the heaviest asks",
      total: 3,
      limit: 3,
      own: 3,
      heaviest: 3,
      decision: "refuse",
    },
    {
      name: "full, everyone holds one",
      total: 3,
      limit: 3,
      own: 0,
      heaviest: 1,
      decision: "refuse",
    },
    {
      name: "over the limit (lowered)",
      total: 5,
      limit: 3,
      own: 0,
      heaviest: 5,
      decision: "preempt",
    },
  ] as const)("$name", ({ total, limit, own, heaviest, decision }) => {
    expect(decideFairShare({ total, limit, own, heaviest })).toBe(decision);
  });
});

describe("createHolderLedger", () => {
  it("counts holds per connection and forgets each once", () => {
    const ledger = createHolderLedger<string>();
    const a = {};
    const b = {};
    const forgetA1 = ledger.add(a, "a1");
    ledger.add(a, "a2");
    ledger.add(b, "b1");
    expect([ledger.total, ledger.countOf(a), ledger.countOf(b)]).toEqual([3, 2, 1]);
    forgetA1();
    forgetA1();
    expect([ledger.total, ledger.countOf(a)]).toEqual([2, 1]);
  });

  it("names the heaviest connection and its oldest hold; none when empty", () => {
    const ledger = createHolderLedger<string>();
    expect(ledger.heaviest()).toBeUndefined();
    const a = {};
    const b = {};
    ledger.add(a, "a1");
    const forgetB1 = ledger.add(b, "b1");
    ledger.add(b, "b2");
    expect(ledger.heaviest()).toEqual({ connection: b, count: 2, oldest: "b1" });
    forgetB1();
    // Equals: the first connection found wins; b's oldest is now b2.
    expect(ledger.heaviest()).toMatchObject({ connection: a, count: 1, oldest: "a1" });
    ledger.add(b, "b3");
    expect(ledger.heaviest()).toEqual({ connection: b, count: 2, oldest: "b2" });
  });

  it("decides with the counts it holds", () => {
    const ledger = createHolderLedger<string>();
    const greedy = {};
    const polite = {};
    for (const hold of ["g1", "g2", "g3"]) ledger.add(greedy, hold);
    expect(ledger.decide(polite, 4)).toEqual({ decision: "admit" });
    expect(ledger.decide(greedy, 3).decision).toBe("refuse");
    expect(ledger.decide(polite, 3)).toEqual({
      decision: "preempt",
      heaviest: { connection: greedy, count: 3, oldest: "g1" },
    });
  });
});
