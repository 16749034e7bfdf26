/**
 * The import policy's ranking of one service's candidates: the one place that
 * decides who wins, shared by `resolve` and the registrar's projection index.
 */
import { describe, expect, it } from "vitest";
import { createImportPolicy, type PolicyCandidate } from "../../services/common/import-policy.js";

function candidate(origin: string, version: string, service = "ns/s"): PolicyCandidate {
  return { origin, service, projection: { service, version } };
}

const T1 = "2026-11-01T10:00:00.000000001Z";
const T2 = "2026-11-01T10:00:00.000000002Z";
const T3 = "2026-11-01T10:00:00.000000003Z";

describe("import policy: rank", () => {
  const cases: { name: string; input: PolicyCandidate[]; ranked: string[] }[] = [
    { name: "no candidates", input: [], ranked: [] },
    { name: "one candidate", input: [candidate("a", T1)], ranked: ["a"] },
    {
      name: "highest version first",
      input: [candidate("a", T1), candidate("b", T3), candidate("c", T2)],
      ranked: ["b", "c", "a"],
    },
    {
      name: "equal versions: smallest origin name first",
      input: [candidate("zeta", T1), candidate("alpha", T1), candidate("mid", T1)],
      ranked: ["alpha", "mid", "zeta"],
    },
    {
      name: "version first, then origin name",
      input: [candidate("b", T1), candidate("c", T2), candidate("a", T1), candidate("d", T2)],
      ranked: ["c", "d", "a", "b"],
    },
    {
      name: "the same instant in another offset is a tie",
      input: [candidate("b", "2026-11-01T11:00:00+01:00"), candidate("a", "2026-11-01T10:00:00Z")],
      ranked: ["a", "b"],
    },
    {
      name: "versions compare as instants, not strings",
      input: [candidate("b", "2026-11-01T10:00:00.10Z"), candidate("a", "2026-11-01T10:00:00.9Z")],
      ranked: ["a", "b"],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const policy = createImportPolicy();
      for (const order of [c.input, [...c.input].reverse()]) {
        const input = [...order];
        const ranked = policy.rank(input);
        expect(ranked.map((x) => x.origin)).toEqual(c.ranked);
        expect(input).toEqual(order); // the input is not reordered
        for (let i = 1; i < ranked.length; i++) {
          expect(
            policy.compare(ranked[i - 1] as PolicyCandidate, ranked[i] as PolicyCandidate),
          ).toBeLessThan(0);
        }
      }
    });
  }

  it("takes any iterable and ranks what resolve picks as winner and losers", () => {
    const policy = createImportPolicy();
    const input = [candidate("b", T1), candidate("a", T2), candidate("c", T2)];
    const ranked = policy.rank(new Set(input));
    const [conflict] = policy.resolve(input).conflicts;
    expect(conflict?.winner).toBe(ranked[0]);
    expect(conflict?.losers).toEqual(ranked.slice(1));
  });
});
