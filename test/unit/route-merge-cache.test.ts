/**
 * The caching route table merge, table-driven: over a sequence of inputs it
 * gives the tables `mergeRouteTable` gives (as JSON), reuses the entries
 * whose inputs are the very same objects, makes again the ones whose inputs
 * changed, and returns the previous table itself when nothing changed.
 */
import { describe, expect, it } from "vitest";
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import type { LocalHttpFilters } from "../../services/common/extension-ref-resolve.js";
import type { ImportCandidate } from "../../services/common/import-policy.js";
import {
  mergeRouteTable,
  type RouteTable,
  type RouteTableInputs,
  routeTableToJson,
} from "../../services/common/route-merge.js";
import { createRouteTableMerger } from "../../services/common/route-merge-cache.js";
import { makeProjection, meshRecord, versionAt } from "../support/projections.js";

const imported = (service: string, n: number, origin = "hub"): ImportCandidate => ({
  origin,
  service,
  projection: makeProjection(service, { origin, version: versionAt(n) }),
});
const local = (service: string): ServiceConfigProjection =>
  makeProjection(service, { backend: "local/backend", version: "" });
const mesh = (n: number): ImportCandidate => ({
  origin: "hub",
  service: "@mesh",
  projection: meshRecord({ retry: { attempts: n } }, { version: versionAt(n) }),
});

// Objects shared between steps (the same object means the same input to the cache).
const deps = ["shop/b", "shop/a", "shop/c"];
const a1 = imported("shop/a", 1);
const a2 = imported("shop/a", 2);
const b1 = imported("shop/b", 1);
const bLocal = local("shop/b");
const mesh1 = mesh(1);
const filters: LocalHttpFilters = new Map();

const inputs = (
  dependencies: string[],
  winners: ImportCandidate[],
  locals: ServiceConfigProjection[] = [],
  localFilters: LocalHttpFilters | undefined = undefined,
  cluster = "spoke",
): RouteTableInputs => ({
  dependencies,
  local: new Map(locals.map((p) => [p.service, p])),
  imported: new Map(winners.map((c) => [c.service, c])),
  cluster,
  filters: localFilters,
});

/**
 * Each step: its inputs, the services whose entries must be the previous
 * step's objects (by service), and whether the whole table must be.
 */
const steps: [string, RouteTableInputs, string[], boolean][] = [
  ["a first table", inputs(deps, [a1, b1, mesh1]), [], false],
  [
    "the same objects again: the same table",
    inputs(deps, [a1, b1, mesh1]),
    ["shop/a", "shop/b"],
    true,
  ],
  ["one service changes: only its entry is new", inputs(deps, [a2, b1, mesh1]), ["shop/b"], false],
  [
    "equal content, other objects: new entries",
    inputs(deps, [imported("shop/a", 2), b1, mesh1]),
    ["shop/b"],
    false,
  ],
  ["a local projection wins its service", inputs(deps, [a2, b1, mesh1], [bLocal]), [], false],
  ["and stays the same entry", inputs(deps, [a2, b1, mesh1], [bLocal]), ["shop/a", "shop/b"], true],
  [
    "new filters: every entry is made again",
    inputs(deps, [a2, b1, mesh1], [bLocal], filters),
    [],
    false,
  ],
  [
    "another cluster: every entry is made again",
    inputs(deps, [a2, b1, mesh1], [bLocal], filters, "east"),
    [],
    false,
  ],
  [
    "a service leaves the dependency set",
    inputs(["shop/a"], [a2, b1, mesh1], [bLocal], filters, "east"),
    ["shop/a"],
    false,
  ],
  [
    "the mesh record goes",
    inputs(["shop/a"], [a2, b1], [bLocal], filters, "east"),
    ["shop/a"],
    false,
  ],
  ["an empty dependency set", inputs([], [a2, b1, mesh1]), [], false],
  ["a service comes back", inputs(["shop/c", "shop/b"], [b1, mesh1]), [], false],
];

describe("caching route table merge", () => {
  it("gives mergeRouteTable's tables and reuses exactly what did not change", () => {
    const merge = createRouteTableMerger();
    let previous: RouteTable | undefined;
    for (const [name, step, kept, same] of steps) {
      const table = merge(step);
      expect(routeTableToJson(table), name).toBe(routeTableToJson(mergeRouteTable(step)));
      expect(table === previous, name).toBe(same);
      for (const entry of table.services) {
        const before = previous?.services.find((e) => e.service === entry.service);
        expect(entry === before, `${name}: ${entry.service}`).toBe(kept.includes(entry.service));
      }
      previous = table;
    }
  });

  it("sorts a new dependency list of the same services again, and keeps its entries", () => {
    const merge = createRouteTableMerger();
    const first = merge(inputs(["shop/a", "shop/b"], [a1, b1]));
    const second = merge(inputs(["shop/b", "shop/a", "shop/a"], [a1, b1]));
    expect(second.services.map((e) => e.service)).toEqual(["shop/a", "shop/b"]);
    expect(second).toBe(first);
  });
});
