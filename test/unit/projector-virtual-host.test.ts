/**
 * VirtualHost (mesh.aether.dev/v1alpha1) on the projection, table-driven:
 * valid VirtualHosts and what they carry, every invalid one with its reason,
 * conflicts (a host name belongs to one Service: the oldest claim, then
 * namespace/name, wins; the loser is rejected whole), scope, determinism,
 * and the incremental projector equal byte for byte to a full projection
 * through random edits of VirtualHosts, Services, exports and routes.
 */
import { type JsonValue, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import {
  type ProjectorOptions,
  projectServices,
  ROUTE_REJECTION_REASONS,
} from "../../services/common/projector.js";
import { createIncrementalProjector } from "../../services/common/projector-incremental.js";
import {
  checkIncrementalAgainstFull,
  objectEditor,
  projectedField,
} from "../support/incremental-vs-full.js";
import { kubeService, serviceExport } from "../support/kube-objects.js";

const NS = "shop";
const MESH = "mesh.aether.dev/v1alpha1";

/** A Service with an `http` (80) and a `grpc` (9090) port. */
function service(name: string, namespace = NS): KubeObject {
  const ports = [
    { name: "http", port: 80 },
    { name: "grpc", port: 9090 },
  ];
  return kubeService(name, namespace, ports);
}

interface HostOptions {
  readonly target?: unknown;
  readonly hostnames?: unknown;
  readonly created?: string;
  readonly namespace?: string;
  readonly spec?: Record<string, unknown>;
}

function virtualHost(name: string, o: HostOptions = {}): KubeObject {
  return {
    apiVersion: MESH,
    kind: "VirtualHost",
    metadata: {
      namespace: o.namespace ?? NS,
      name,
      ...(o.created === undefined ? {} : { creationTimestamp: o.created }),
    },
    spec: o.spec ?? {
      targetRef: o.target ?? { group: "", kind: "Service", name: "web" },
      hostnames: o.hostnames ?? ["web.example.com"],
    },
  };
}

const WORLD: KubeObject[] = [
  service("web"),
  serviceExport("web", NS),
  service("api"),
  serviceExport("api", NS),
  service("db"),
];

function virtualHostsOf(
  objects: KubeObject[],
  key = `${NS}/web`,
  options: ProjectorOptions = {},
): JsonValue[] {
  return projectedField(objects, key, "virtualHosts", options);
}

const rejectionsOf = (objects: KubeObject[]) =>
  projectServices(objects).rejections.map((r) => [r.route.kind, r.route.name, r.reason]);

describe("projector: VirtualHost names are carried on the Service", () => {
  const cases: [string, KubeObject[], JsonValue[]][] = [
    ["no VirtualHost: nothing", [], []],
    [
      "every port, names sorted",
      [virtualHost("v", { hostnames: ["www.example.com", "*.web.example.com"] })],
      [{ hostnames: ["*.web.example.com", "www.example.com"], namespace: NS, name: "v" }],
    ],
    [
      "one named port: its number and sectionName",
      [
        virtualHost("v", {
          target: { group: "", kind: "Service", name: "web", sectionName: "grpc" },
        }),
      ],
      [
        {
          port: 9090,
          sectionName: "grpc",
          hostnames: ["web.example.com"],
          namespace: NS,
          name: "v",
        },
      ],
    ],
    [
      "two VirtualHosts on one Service, even with the same name: both, by port then name",
      [
        virtualHost("b"),
        virtualHost("a", { hostnames: ["web.example.com", "w.example.com"] }),
        virtualHost("c", {
          target: { group: "", kind: "Service", name: "web", sectionName: "http" },
        }),
      ],
      [
        { hostnames: ["w.example.com", "web.example.com"], namespace: NS, name: "a" },
        { hostnames: ["web.example.com"], namespace: NS, name: "b" },
        { port: 80, sectionName: "http", hostnames: ["web.example.com"], namespace: NS, name: "c" },
      ],
    ],
    [
      "a VirtualHost of another Service is not this one's",
      [virtualHost("v", { target: { group: "", kind: "Service", name: "api" } })],
      [],
    ],
  ];
  for (const [name, extra, expected] of cases) {
    it(name, () => {
      expect(virtualHostsOf([...WORLD, ...extra])).toEqual(expected);
      expect(projectServices([...WORLD, ...extra]).rejections).toEqual([]);
    });
  }
});

describe("projector: invalid VirtualHosts are rejected with a reason", () => {
  const ref = (extra: Record<string, unknown>) => ({
    target: { group: "", kind: "Service", name: "web", ...extra },
  });
  const cases: [string, KubeObject[], string, RegExp][] = [
    [
      "an upper-case name",
      [virtualHost("p", { hostnames: ["Web.example.com"] })],
      "invalid_value",
      /spec\.hostnames\[0\]/,
    ],
    [
      "an IP address",
      [virtualHost("p", { hostnames: ["10.0.0.1"] })],
      "invalid_value",
      /no IP address/,
    ],
    [
      "a wildcard inside",
      [virtualHost("p", { hostnames: ["a.*.example.com"] })],
      "invalid_value",
      /RFC 1123/,
    ],
    ["a bare wildcard", [virtualHost("p", { hostnames: ["*"] })], "invalid_value", /RFC 1123/],
    [
      "a port in the name",
      [virtualHost("p", { hostnames: ["web.example.com:80"] })],
      "invalid_value",
      /RFC 1123/,
    ],
    [
      "a name listed twice",
      [virtualHost("p", { hostnames: ["a.b", "a.b"] })],
      "invalid_value",
      /listed twice/,
    ],
    [
      "a label over 63 characters",
      [virtualHost("p", { hostnames: [`${"a".repeat(64)}.b`] })],
      "invalid_value",
      /RFC 1123/,
    ],
    [
      "17 names",
      [virtualHost("p", { hostnames: Array.from({ length: 17 }, (_, i) => `h${i}.b`) })],
      "invalid_value",
      /at most 16/,
    ],
    ["no names", [virtualHost("p", { hostnames: [] })], "invalid_object", /at least one/],
    [
      "a name that is not a string",
      [virtualHost("p", { hostnames: [7] })],
      "invalid_object",
      /must be a string/,
    ],
    [
      "no targetRef",
      [virtualHost("p", { spec: { hostnames: ["a.b"] } })],
      "invalid_object",
      /spec\.targetRef/,
    ],
    [
      "an unknown field",
      [virtualHost("p", { spec: { targetRef: ref({}).target, hostnames: ["a.b"], port: 1 } })],
      "unsupported_field",
      /spec\.port/,
    ],
    [
      "a targetRef to a Deployment",
      [virtualHost("p", { target: { group: "apps", kind: "Deployment", name: "web" } })],
      "invalid_kind",
      /Deployment\.apps/,
    ],
    [
      "a Service that does not exist",
      [virtualHost("p", { target: { group: "", kind: "Service", name: "ghost" } })],
      "unknown_target",
      /shop\/ghost, which does not exist/,
    ],
    [
      "a sectionName with no port",
      [virtualHost("p", ref({ sectionName: "admin" }))],
      "unknown_target",
      /no port of that name/,
    ],
    [
      "a bad creationTimestamp",
      [virtualHost("p", { created: "yesterday" })],
      "invalid_value",
      /RFC 3339/,
    ],
    [
      "two different objects with one name",
      [virtualHost("p"), virtualHost("p", { hostnames: ["other.example.com"] })],
      "duplicate_object",
      /several different VirtualHost/,
    ],
  ];
  for (const [name, extra, reason, message] of cases) {
    it(`${name}: ${reason}`, () => {
      const output = projectServices([...WORLD, ...extra]);
      expect(rejectionsOf([...WORLD, ...extra])).toEqual([["VirtualHost", "p", reason]]);
      expect(output.rejections[0]?.message).toMatch(message);
      expect(ROUTE_REJECTION_REASONS).toContain(reason);
      expect(virtualHostsOf([...WORLD, ...extra])).toEqual([]);
    });
  }

  it("an object without a name is rejected as invalid_object", () => {
    const nameless = { ...virtualHost("p"), metadata: { namespace: NS } } as KubeObject;
    expect(rejectionsOf([...WORLD, nameless])).toEqual([["VirtualHost", "", "invalid_object"]]);
  });

  it("the rejection names the in-scope Service it concerns", () => {
    const output = projectServices([...WORLD, virtualHost("p", { hostnames: ["A.b"] })]);
    expect(output.rejections[0]?.services).toEqual([`${NS}/web`]);
  });

  it("a VirtualHost of a Service out of scope (not exported) is neither carried nor reported", () => {
    const v = virtualHost("p", {
      target: { group: "", kind: "Service", name: "db" },
      hostnames: ["A"],
    });
    const output = projectServices([...WORLD, v]);
    expect(output.rejections).toEqual([]);
    expect(output.projections.map((p) => p.service)).not.toContain(`${NS}/db`);
  });
});

describe("projector: VirtualHost conflicts (one Service per host name)", () => {
  const on = (name: string, target: string, hostnames: string[], created?: string) =>
    virtualHost(name, {
      target: { group: "", kind: "Service", name: target },
      hostnames,
      ...(created === undefined ? {} : { created }),
    });
  const cases: [string, KubeObject[], Record<string, string[]>, [string, string][]][] = [
    [
      "the older claim wins; the newer is rejected whole, its other names too",
      [
        on("new", "web", ["shared.example.com", "own.example.com"], "2026-02-01T00:00:00Z"),
        on("old", "api", ["shared.example.com"], "2026-01-01T00:00:00Z"),
      ],
      { web: [], api: ["old"] },
      [["new", "conflicted"]],
    ],
    [
      "same age: first by namespace/name wins",
      [on("b", "web", ["shared.example.com"]), on("a", "api", ["shared.example.com"])],
      { web: [], api: ["a"] },
      [["b", "conflicted"]],
    ],
    [
      "one with a creation time is older than one without",
      [
        on("a", "web", ["shared.example.com"]),
        on("z", "api", ["shared.example.com"], "2026-01-01T00:00:00Z"),
      ],
      { web: [], api: ["z"] },
      [["a", "conflicted"]],
    ],
    [
      "a claim on the same Service is no conflict",
      [on("a", "web", ["shared.example.com"]), on("b", "web", ["shared.example.com"])],
      { web: ["a", "b"], api: [] },
      [],
    ],
    [
      "a wildcard and a name under it are different names",
      [on("a", "web", ["*.example.com"]), on("b", "api", ["api.example.com"])],
      { web: ["a"], api: ["b"] },
      [],
    ],
    [
      "a rejected loser holds nothing: a third claim on its other name wins",
      [
        on("a", "api", ["x.example.com"], "2026-01-01T00:00:00Z"),
        on("b", "web", ["x.example.com", "y.example.com"], "2026-01-02T00:00:00Z"),
        on("c", "api", ["y.example.com"], "2026-01-03T00:00:00Z"),
      ],
      { web: [], api: ["a", "c"] },
      [["b", "conflicted"]],
    ],
    [
      "an invalid older VirtualHost claims nothing",
      [
        on("a", "api", ["shared.example.com", "Bad"], "2026-01-01T00:00:00Z"),
        on("b", "web", ["shared.example.com"], "2026-01-02T00:00:00Z"),
      ],
      { web: ["b"], api: [] },
      [["a", "invalid_value"]],
    ],
    [
      "a claim for a Service out of scope still holds the name (the whole cluster decides)",
      [
        on("a", "db", ["shared.example.com"], "2026-01-01T00:00:00Z"),
        on("b", "web", ["shared.example.com"], "2026-01-02T00:00:00Z"),
      ],
      { web: [], api: [] },
      [["b", "conflicted"]],
    ],
  ];
  for (const [name, extra, carried, rejected] of cases) {
    it(name, () => {
      const objects = [...WORLD, ...extra];
      for (const [target, names] of Object.entries(carried)) {
        const got = virtualHostsOf(objects, `${NS}/${target}`).map(
          (v) => (v as { name: string }).name,
        );
        expect(got, target).toEqual(names);
      }
      const output = projectServices(objects);
      expect(output.rejections.map((r) => [r.route.name, r.reason])).toEqual(rejected);
      for (const r of output.rejections.filter((x) => x.reason === "conflicted")) {
        expect(r.message).toMatch(
          /spec\.hostnames claims "(shared|x)\.example\.com", which VirtualHost shop\/\w+ holds for Service shop\/\w+/,
        );
      }
    });
  }
});

describe("projector: VirtualHost determinism", () => {
  const bytes = (objects: KubeObject[]) =>
    projectServices(objects).projections.map((p) => toBinary(ServiceConfigProjectionSchema, p));

  it("the same objects in any order give the same bytes and rejections", () => {
    const objects = [
      ...WORLD,
      virtualHost("b", { hostnames: ["z.example.com", "a.example.com"] }),
      virtualHost("a", {
        target: { group: "", kind: "Service", name: "api" },
        hostnames: ["a.example.com"],
      }),
      virtualHost("c", {
        target: { group: "", kind: "Service", name: "web", sectionName: "http" },
      }),
    ];
    expect(bytes(objects)).toEqual(bytes([...objects].reverse()));
    expect(projectServices(objects).rejections).toEqual(
      projectServices([...objects].reverse()).rejections,
    );
    expect(rejectionsOf(objects)).toEqual([["VirtualHost", "b", "conflicted"]]);
  });

  it("a changed host name changes the bytes", () => {
    expect(bytes([...WORLD, virtualHost("v")])).not.toEqual(
      bytes([...WORLD, virtualHost("v", { hostnames: ["web2.example.com"] })]),
    );
  });
});

/** One random edit of VirtualHosts, Services, exports and routes; never modifies an object. */
function edit(next: () => number, objects: readonly KubeObject[]): KubeObject[] {
  const { copy, pick, replace } = objectEditor(next, objects);
  const names = ["web", "api", "db", "ghost"];
  const roll = next();
  const name = pick(names);
  if (roll < 0.3) {
    const target = {
      group: "",
      kind: "Service",
      name,
      ...(next() < 0.3 ? { sectionName: pick(["http", "grpc", "admin"]) } : {}),
    };
    const hostnames = [pick(["a.example.com", "b.example.com", "*.example.com", "Bad"])];
    if (next() < 0.4) hostnames.push(pick(["c.example.com", "a.example.com"]));
    const created = `2026-01-0${1 + Math.floor(next() * 3)}T00:00:00Z`;
    const vh = `v${Math.floor(next() * 4)}`;
    replace(
      "VirtualHost",
      vh,
      next() < 0.15 ? undefined : virtualHost(vh, { target, hostnames, created }),
    );
  } else if (roll < 0.5) {
    replace("Service", name, next() < 0.3 ? undefined : service(name));
  } else if (roll < 0.65) {
    replace("ServiceExport", name, next() < 0.4 ? undefined : serviceExport(name, NS));
  } else {
    // A route edit: an incremental update under VirtualHosts; under exportAll it moves scope.
    const route = `r${Math.floor(next() * 3)}`;
    const object: KubeObject = {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: { namespace: NS, name: route },
      spec: {
        parentRefs: [{ group: "", kind: "Service", name }],
        rules: [
          { matches: [{ path: { type: "PathPrefix", value: `/${Math.floor(next() * 9)}` } }] },
        ],
      },
    };
    replace("HTTPRoute", route, next() < 0.3 ? undefined : object);
  }
  return copy;
}

describe("incremental projector with VirtualHosts", () => {
  it("a route that brings a VirtualHost's Service into scope (exportAll) reports the VirtualHost", () => {
    const options = { exportAll: true };
    const bad = virtualHost("v", {
      target: { group: "", kind: "Service", name: "db" },
      hostnames: ["A"],
    });
    const route: KubeObject = {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: { namespace: NS, name: "r" },
      spec: { parentRefs: [{ group: "", kind: "Service", name: "db" }], rules: [{}] },
    };
    const filler = Array.from({ length: 12 }, (_, i) => service(`filler${i}`, "other"));
    const projector = createIncrementalProjector(options);
    const before = [...WORLD, ...filler, bad];
    expect(projector.update(before).rejections).toEqual([]);
    const update = projector.update([...before, route]);
    expect(update.rejections.map((r) => [r.route.name, r.reason, r.services])).toEqual([
      ["v", "invalid_value", [`${NS}/db`]],
    ]);
    expect(update.rejections).toEqual(projectServices([...before, route], options).rejections);
  });

  for (const [label, options] of [
    ["exported services", {}],
    ["exportAll", { exportAll: true }],
  ] as const) {
    it(`adds up to the full projection, byte for byte, after every random edit: ${label}`, () => {
      const filler = Array.from({ length: 12 }, (_, i) => service(`filler${i}`, "other"));
      const incremental = checkIncrementalAgainstFull(
        options,
        [...WORLD, ...filler, virtualHost("v0")],
        edit,
      );
      expect(incremental).toBeGreaterThan(10 * 40 * 0.2);
    });
  }
});
