/** The route table merge: local wins per service, imported fills the rest, the dependency set bounds it. */

import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type { ImportCandidate } from "../../services/common/import-policy.js";
import { localVersion } from "../../services/common/projection-content.js";
import { mergeRouteTable, routeTableToJson } from "../../services/common/route-merge.js";
import { makeProjection, meshRecord, versionAt } from "../support/projections.js";

const imported = (service: string, origin: string, n: number): ImportCandidate => ({
  origin,
  service,
  projection: makeProjection(service, { origin, version: versionAt(n) }),
});
const local = (service: string, backend = "local/backend"): ServiceConfigProjection =>
  makeProjection(service, { backend, version: "" });
const noRoutes = (service: string): ServiceConfigProjection =>
  create(ServiceConfigProjectionSchema, { service, routes: [] });

interface Case {
  readonly name: string;
  readonly dependencies: string[];
  readonly local: ServiceConfigProjection[];
  readonly imported: ImportCandidate[];
  /** `service:source:origin` per entry. */
  readonly expected: string[];
}

const cases: Case[] = [
  {
    name: "imported config fills every service of the set that has some",
    dependencies: ["shop/b", "shop/a", "shop/none"],
    local: [],
    imported: [imported("shop/a", "hub", 1), imported("shop/b", "east", 2)],
    expected: ["shop/a:imported:hub", "shop/b:imported:east"],
  },
  {
    name: "a local route wins over the imported config of its service, whole service",
    dependencies: ["shop/a", "shop/b"],
    local: [local("shop/a")],
    imported: [imported("shop/a", "hub", 9), imported("shop/b", "hub", 1)],
    expected: ["shop/a:local:spoke", "shop/b:imported:hub"],
  },
  {
    name: "local config alone is enough",
    dependencies: ["shop/a"],
    local: [local("shop/a")],
    imported: [],
    expected: ["shop/a:local:spoke"],
  },
  {
    name: "a local projection without routes (a ServiceExport alone) does not win",
    dependencies: ["shop/a"],
    local: [noRoutes("shop/a")],
    imported: [imported("shop/a", "hub", 1)],
    expected: ["shop/a:imported:hub"],
  },
  {
    name: "services outside the dependency set are left out, local or imported",
    dependencies: ["shop/a"],
    local: [local("shop/x")],
    imported: [imported("shop/a", "hub", 1), imported("shop/y", "hub", 1)],
    expected: ["shop/a:imported:hub"],
  },
  {
    name: "an empty dependency set gives an empty table",
    dependencies: [],
    local: [local("shop/a")],
    imported: [imported("shop/a", "hub", 1)],
    expected: [],
  },
];

describe("route table merge", () => {
  for (const c of cases) {
    it(c.name, () => {
      const table = mergeRouteTable({
        dependencies: c.dependencies,
        local: new Map(c.local.map((p) => [p.service, p])),
        imported: new Map(c.imported.map((i) => [i.service, i])),
        cluster: "spoke",
      });
      expect(table.services.map((e) => `${e.service}:${e.source}:${e.origin}`)).toEqual(c.expected);
    });
  }

  it("records the version that decided each service, and stamps local projections with it", () => {
    const mine = local("shop/a");
    const table = mergeRouteTable({
      dependencies: ["shop/a", "shop/b"],
      local: new Map([["shop/a", mine]]),
      imported: new Map([["shop/b", imported("shop/b", "hub", 7)]]),
      cluster: "spoke",
    });
    const [a, b] = table.services;
    expect(a?.version).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(a?.version).toBe(localVersion(mine));
    expect(a?.projection.originCluster).toBe("spoke");
    expect(a?.projection.version).toBe(a?.version);
    expect(b?.version).toBe(versionAt(7));
    expect(mine.originCluster).toBe(""); // the input is not changed
  });

  it("serializes deterministically, so equal tables give equal text", () => {
    const inputs = {
      dependencies: ["shop/a"],
      local: new Map<string, ServiceConfigProjection>(),
      imported: new Map([["shop/a", imported("shop/a", "hub", 1)]]),
      cluster: "spoke",
    };
    const first = routeTableToJson(mergeRouteTable(inputs));
    expect(routeTableToJson(mergeRouteTable(inputs))).toBe(first);
    const parsed = JSON.parse(first) as { services: Record<string, unknown>[] };
    expect(parsed.services[0]).toMatchObject({
      service: "shop/a",
      source: "imported",
      origin: "hub",
      version: versionAt(1),
      projection: { service: "shop/a", originCluster: "hub" },
    });
    expect(localVersion(local("shop/a", "x/one"))).not.toBe(localVersion(local("shop/a", "x/two")));
  });
});

/** An origin's mesh record as the import policy's winner. */
const importedMesh = (origin: string, n: number, attempts: number): ImportCandidate => ({
  origin,
  service: "@mesh",
  projection: meshRecord({ retry: { attempts } }, { origin, version: versionAt(n) }),
});
/** A local mesh record (from the local source's MeshConfig). */
const localMesh = (attempts: number): ServiceConfigProjection =>
  meshRecord({ retry: { attempts } }, { origin: "", version: "" });

describe("route table merge: the mesh defaults", () => {
  const cases: [
    name: string,
    dependencies: string[],
    local: ServiceConfigProjection[],
    imported: ImportCandidate[],
    expected: string | undefined,
  ][] = [
    [
      "the winning imported mesh record's defaults",
      ["shop/a"],
      [],
      [imported("shop/a", "hub", 1), importedMesh("hub", 4, 2)],
      "imported:hub:2",
    ],
    [
      "a local MeshConfig wins over the imported one, whole",
      ["shop/a"],
      [localMesh(7)],
      [imported("shop/a", "hub", 1), importedMesh("hub", 4, 2)],
      "local:spoke:7",
    ],
    [
      "a local mesh record without a MeshConfig does not win",
      ["shop/a"],
      [{ ...localMesh(7), meshConfig: undefined }],
      [importedMesh("hub", 4, 2)],
      "imported:hub:2",
    ],
    [
      "an imported mesh record without a MeshConfig gives none",
      ["shop/a"],
      [],
      [{ ...importedMesh("hub", 4, 2), projection: { ...meshRecord({}), meshConfig: undefined } }],
      undefined,
    ],
    ["no mesh record: none", ["shop/a"], [], [imported("shop/a", "hub", 1)], undefined],
    [
      "the defaults apply whether or not a service has config",
      ["shop/none"],
      [],
      [importedMesh("east", 1, 3)],
      "imported:east:3",
    ],
    [
      "an empty dependency set: no defaults either",
      [],
      [localMesh(7)],
      [importedMesh("hub", 4, 2)],
      undefined,
    ],
  ];
  it.each(cases)("%s", (_name, dependencies, local, imported, expected) => {
    const table = mergeRouteTable({
      dependencies,
      local: new Map(local.map((p) => [p.service, p])),
      imported: new Map(imported.map((c) => [c.service, c])),
      cluster: "spoke",
    });
    const mesh = table.meshDefaults;
    expect(
      mesh === undefined
        ? undefined
        : `${mesh.source}:${mesh.origin}:${mesh.config.retry?.attempts}`,
    ).toEqual(expected);
    // The mesh record is never a service of the table.
    expect(table.services.map((e) => e.service)).not.toContain("@mesh");
  });

  it("a local mesh record is stamped with this cluster and its content digest", () => {
    const mine = localMesh(7);
    const mesh = mergeRouteTable({
      dependencies: ["shop/a"],
      local: new Map([["@mesh", mine]]),
      imported: new Map(),
      cluster: "spoke",
    }).meshDefaults;
    expect(mesh?.version).toBe(localVersion(mine));
    expect(mesh?.projection).toMatchObject({ originCluster: "spoke", version: mesh?.version });
  });

  it("serializes as a top-level meshDefaults with its source, origin, version and the MeshConfig as proto JSON; absent without one", () => {
    const withMesh = mergeRouteTable({
      dependencies: ["shop/a"],
      local: new Map(),
      imported: new Map([
        ["shop/a", imported("shop/a", "hub", 1)],
        [
          "@mesh",
          {
            origin: "hub",
            service: "@mesh",
            projection: meshRecord(
              {
                requestTimeout: { seconds: 15n },
                retryBudget: { percent: 20, minRetryConcurrency: 3 },
                outlierDetection: { consecutive5xxErrors: 5, baseEjectionTime: { seconds: 30n } },
              },
              { version: versionAt(9) },
            ),
          },
        ],
      ]),
      cluster: "spoke",
    });
    const parsed = JSON.parse(routeTableToJson(withMesh)) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual(["meshDefaults", "services"]);
    expect(parsed.meshDefaults).toEqual({
      source: "imported",
      origin: "hub",
      version: versionAt(9),
      config: {
        name: "default",
        requestTimeout: "15s",
        retryBudget: { percent: 20, minRetryConcurrency: 3 },
        outlierDetection: { consecutive5xxErrors: 5, baseEjectionTime: "30s" },
      },
    });
    const without = mergeRouteTable({
      dependencies: ["shop/a"],
      local: new Map(),
      imported: new Map([["shop/a", imported("shop/a", "hub", 1)]]),
      cluster: "spoke",
    });
    expect(Object.keys(JSON.parse(routeTableToJson(without)))).toEqual(["services"]);
  });
});
