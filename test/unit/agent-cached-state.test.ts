/**
 * The agent's restore of its last-known cache (every imported projection
 * checked again, the refused ones dropped) and its dependency set (given
 * entries checked, the file's joined), table-driven. No timers, no I/O.
 */
import { describe, expect, it } from "vitest";
import { restoreCachedState } from "../../clients/agent/cached-state.js";
import { createDependencySet } from "../../clients/agent/dependency-set.js";
import type { CachedState } from "../../clients/agent/last-known-cache.js";
import { createImportPolicy, type ImportCandidate } from "../../services/common/import-policy.js";
import { makeProjection, versionAt } from "../support/projections.js";

const entry = (origin: string, service: string, n: number, claimed = origin): ImportCandidate => ({
  origin,
  service,
  projection: makeProjection(service, { origin: claimed, version: versionAt(n) }),
});

const cached = (imported: ImportCandidate[]): CachedState => ({
  revision: 42n,
  services: ["shop/a", "shop/b"],
  imported,
  local: [makeProjection("shop/b", { version: "", backend: "shop/b-local" })],
  savedAt: undefined,
});

describe("cached state: restore", () => {
  const cases: [string, string | undefined, ImportCandidate[], string[], string[]][] = [
    [
      "every acceptable projection is restored",
      undefined,
      [entry("hub", "shop/a", 1), entry("east", "shop/a", 2), entry("hub", "shop/b", 1)],
      ["east/shop/a", "hub/shop/a", "hub/shop/b"],
      [],
    ],
    [
      "a service outside the cached dependency set is dropped",
      undefined,
      [entry("hub", "shop/a", 1), entry("hub", "shop/z", 1)],
      ["hub/shop/a"],
      ["not_requested"],
    ],
    [
      "an origin the policy no longer trusts is dropped",
      "hub",
      [entry("hub", "shop/a", 1), entry("east", "shop/b", 1)],
      ["hub/shop/a"],
      ["untrusted_origin"],
    ],
    [
      "a projection claiming another origin is dropped",
      undefined,
      [entry("hub", "shop/a", 1, "rogue")],
      [],
      ["malformed_event"],
    ],
  ];
  for (const [name, control, imported, restored, dropped] of cases) {
    it(name, () => {
      const policy = createImportPolicy(control === undefined ? {} : { controlCluster: control });
      const result = restoreCachedState(cached(imported), policy);
      const held = [...result.restored.state.candidates.values()].map(
        (c) => `${c.origin}/${c.service}`,
      );
      expect(held.sort()).toEqual(restored);
      expect(result.dropped.map((r) => r.reason)).toEqual(dropped);
      expect(result.restored.state.revision).toBe(42n);
      expect(result.restored.state.services).toEqual(["shop/a", "shop/b"]);
      expect([...result.restored.local.keys()]).toEqual(["shop/b"]);
    });
  }
});

describe("cached state: high-water marks", () => {
  it("the file's marks are restored as they are (also those of deleted or dropped projections)", () => {
    const marks = [{ origin: "east", service: "shop/a", version: versionAt(9) }];
    const result = restoreCachedState(
      { ...cached([entry("hub", "shop/a", 1)]), marks },
      createImportPolicy(),
    );
    expect(result.restored.state.marks).toEqual(marks);
  });

  it("a file without marks restores none (the candidates' versions are marks to the follower)", () => {
    const result = restoreCachedState(cached([entry("hub", "shop/a", 1)]), createImportPolicy());
    expect(result.restored.state.marks).toEqual([]);
  });
});

describe("dependency set", () => {
  it("starts from the given entries, unique and sorted, without the file's", () => {
    const set = createDependencySet(["shop/b", "shop/a", "shop/b"], () => ["pay/ledger"]);
    expect(set.services).toEqual(["shop/a", "shop/b"]);
  });

  const steps: [string, string[] | undefined, string[], boolean, string[]][] = [
    // [what, given (undefined: unchanged), file, changed, services]
    [
      "the file's entries join",
      undefined,
      ["pay/ledger", "shop/a"],
      true,
      ["pay/ledger", "shop/a"],
    ],
    [
      "the same again: unchanged",
      undefined,
      ["shop/a", "pay/ledger"],
      false,
      ["pay/ledger", "shop/a"],
    ],
    ["new given entries", ["shop/c"], ["pay/ledger"], true, ["pay/ledger", "shop/c"]],
    ["an empty file", ["shop/c"], [], true, ["shop/c"]],
    ["nothing at all", [], [], true, []],
  ];
  it("refreshes from the given entries and the file's, telling whether it changed", () => {
    let file: string[] = [];
    const set = createDependencySet(["shop/a"], () => file);
    for (const [what, given, fileEntries, changed, services] of steps) {
      if (given !== undefined) set.setGiven(given);
      file = fileEntries;
      expect([what, set.refresh(), set.services]).toEqual([what, changed, services]);
    }
  });

  it("refuses an entry that is not namespace/name, and keeps what it had", () => {
    expect(() => createDependencySet(["shop/a", "Shop"], () => [])).toThrow(TypeError);
    const set = createDependencySet(["shop/a"], () => []);
    expect(() => set.setGiven(["shop/b", "no-slash"])).toThrow(/dependency set/);
    expect(set.refresh()).toBe(false);
    expect(set.services).toEqual(["shop/a"]);
  });
});
